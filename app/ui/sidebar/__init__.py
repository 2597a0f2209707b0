"""The conversation list: its rows, groups by date, search, and when it folds away."""
