"""The app's shape: layering, the doors onto the engine, what starting the window imports."""
