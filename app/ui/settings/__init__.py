"""The Settings dialog and the model settings dialog, with the rows they are built from."""
