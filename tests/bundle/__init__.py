"""The Linux bundle built with PyInstaller (`packaging/`)."""
