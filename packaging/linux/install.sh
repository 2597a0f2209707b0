#!/usr/bin/env sh
# Install this unpacked bundle for the current user: a `harmony-desk` command in ~/.local/bin,
# the menu entry, the icon and the AppStream data under ~/.local/share. Nothing needs root.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin="${XDG_BIN_HOME:-$HOME/.local/bin}"
share="${XDG_DATA_HOME:-$HOME/.local/share}"
mkdir -p "$bin"
ln -sf "$here/harmony-desk" "$bin/harmony-desk"
for f in applications/harmony-desk.desktop icons/hicolor/scalable/apps/harmony-desk.svg \
         icons/hicolor/256x256/apps/harmony-desk.png metainfo/io.github.harmonydesk.HarmonyDesk.metainfo.xml; do
  mkdir -p "$share/$(dirname "$f")"
  cp "$here/share/$f" "$share/$f"
done
sed -i "s|^Exec=harmony-desk|Exec=$here/harmony-desk|" "$share/applications/harmony-desk.desktop"
echo "Harmony Desk installed: run 'harmony-desk', or find it in your applications menu."
