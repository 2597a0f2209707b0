#!/usr/bin/env bash
# Build the Linux one-folder bundle (PyInstaller) and its .tar.gz, with the desktop file, icons and
# AppStream metadata, then run the bundle's own --self-test offscreen on empty user folders.
#   packaging/build_linux.sh            (uses .venv/bin/python; OUT=dist by default)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${OUT:-dist}
"$PY" -m pip install --quiet "pyinstaller>=6.10"
version=$("$PY" -c "import app; print(app.__version__)")
"$PY" -m PyInstaller --noconfirm --log-level WARN --distpath "$OUT" --workpath build/pyinstaller \
  packaging/harmony-desk.spec
bundle="$OUT/harmony-desk"
share="$bundle/share"
install -D -m 644 packaging/linux/harmony-desk.desktop "$share/applications/harmony-desk.desktop"
install -D -m 644 resources/icons/harmony-desk.svg "$share/icons/hicolor/scalable/apps/harmony-desk.svg"
install -D -m 644 resources/icons/harmony-desk-256.png "$share/icons/hicolor/256x256/apps/harmony-desk.png"
install -D -m 644 packaging/linux/io.github.harmonydesk.HarmonyDesk.metainfo.xml \
  "$share/metainfo/io.github.harmonydesk.HarmonyDesk.metainfo.xml"
install -m 755 packaging/linux/install.sh "$bundle/install.sh"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
echo "self-test of the bundle (empty config, data and cache folders, offscreen):"
env QT_QPA_PLATFORM=offscreen HARMONY_DESK_CONFIG="$home/config" HARMONY_DESK_DATA="$home/data" \
  HARMONY_DESK_CACHE="$home/cache" "$bundle/harmony-desk" --self-test
tarball="$OUT/harmony-desk-$version-linux-$(uname -m).tar.gz"
tar -C "$OUT" -czf "$tarball" harmony-desk
echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1)); archive: $tarball ($(du -sh "$tarball" | cut -f1))"
