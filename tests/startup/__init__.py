"""Start-up (`app/startup.py`, `app/self_test.py`): logs, crashes, the self-test."""
