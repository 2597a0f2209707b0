"""The domain model (`app/domain`): values, visibility, what reaches a terminal."""
