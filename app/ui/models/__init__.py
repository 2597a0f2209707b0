"""Models in the window: the header's picker, the chooser, the Models window and Discover."""
