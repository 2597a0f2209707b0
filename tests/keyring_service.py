"""A private Secret Service for the tests: a D-Bus session bus of its own and gnome-keyring in it.

`start()` returns the environment variables that point keyring (and child processes) at it;
`stop()` ends both daemons and removes their folder. Nothing touches the user's own keyring; each
instance (one per test module that asks, in any xdist worker) has its own bus and folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time


class PrivateSecretService:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env: dict[str, str] = {}
        self.runtime: str | None = None

    def start(self) -> dict[str, str]:
        missing = [t for t in ("dbus-daemon", "gnome-keyring-daemon") if shutil.which(t) is None]
        if missing:
            raise RuntimeError(
                f"{', '.join(missing)} not installed (Debian: apt-get install gnome-keyring dbus);"
                " `make test` installs them where it can"
            )
        runtime = self.runtime = tempfile.mkdtemp(prefix="harmony-desk-keyring-")
        os.chmod(runtime, 0o700)
        bus = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(bus)
        assert bus.stdout is not None
        address = bus.stdout.readline().decode().strip()
        self.env = {
            "DBUS_SESSION_BUS_ADDRESS": address,
            "XDG_RUNTIME_DIR": runtime,
            "XDG_DATA_HOME": os.path.join(runtime, "data"),  # where gnome-keyring keeps its file
        }
        keyring = subprocess.Popen(
            ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **self.env},
        )
        self.procs.append(keyring)
        assert keyring.stdin is not None
        keyring.stdin.write(b"test-password")
        keyring.stdin.close()
        time.sleep(0.5)  # it registers on the bus
        return self.env

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self.procs.clear()
        if self.runtime is not None:
            shutil.rmtree(self.runtime, ignore_errors=True)
            self.runtime = None
