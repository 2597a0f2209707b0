"""The debug pane: analysis, the exact prompt, the generated tokens and how the turn ran."""
