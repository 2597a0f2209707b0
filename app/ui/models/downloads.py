"""One download in the Models window's queue: its file, a progress bar, what it is doing, and
Pause / Resume and Cancel.

Guarantees: the row says the bytes fetched, the rate and the time left while it runs, the
error's sentence when it failed (in full in its tooltip), and offers only what can be done
now (no Pause once done, no Cancel once cancelled); every action goes through `LibraryHost`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from app.controllers.library_host import LibraryHost
from app.domain.library import DownloadProgress


class DownloadRow(QWidget):
    """One download in the queue."""

    def __init__(
        self, host: LibraryHost, progress: DownloadProgress, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.host, self.job_id = host, progress.job_id
        row = QHBoxLayout(self)
        row.setContentsMargins(2, 2, 2, 2)
        self.name = QLabel(Path(progress.target).name, self)
        self.bar = QProgressBar(self)
        self.bar.setRange(0, 1000)
        self.bar.setAccessibleName("Download progress")
        self.status = QLabel(self)
        self.toggle = QPushButton(self)
        self.cancel = QPushButton("Cancel", self)
        self.toggle.clicked.connect(self._toggle)
        self.cancel.clicked.connect(lambda: host.cancel(self.job_id))
        for w in (self.name, self.bar, self.status, self.toggle, self.cancel):
            row.addWidget(w)
        row.setStretch(1, 1)
        self.state = ""
        self.show_progress(progress)

    def _toggle(self) -> None:
        (self.host.pause if self.state in ("running", "queued") else self.host.resume)(self.job_id)

    def show_progress(self, p: DownloadProgress) -> None:
        self.state = p.state
        fraction = p.fraction
        self.bar.setRange(0, 1000 if fraction is not None or p.state != "running" else 0)
        self.bar.setValue(int(1000 * (fraction or (1.0 if p.state == "done" else 0.0))))
        words = {"queued": "waiting", "paused": "paused", "cancelled": "cancelled", "done": "done"}
        text = p.line() if p.state == "running" else words.get(p.state, p.state)
        if p.state == "failed":
            text = p.message
        self.status.setText(text)
        self.status.setToolTip(p.message)
        self.toggle.setText("Pause" if p.state in ("running", "queued") else "Resume")
        self.toggle.setVisible(p.state != "done")
        self.cancel.setVisible(p.state not in ("done", "cancelled"))


__all__ = ["DownloadRow"]
