"""The main window: its menus, header row, status line and the dialogs it opens."""
