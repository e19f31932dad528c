#!/usr/bin/env python3
"""Take a screenshot of a workbook sheet as an analyst first sees it: the real LibreOffice Calc
window, maximised on a virtual screen, at 100 % zoom.

    python scripts/screenshot.py report.xlsx --sheet Overview [--size 1600x1000] [--out shot.png]

A PDF shows how a sheet prints; only the window shows what fits in one screen. The sheet is made
the active one in a copy of the workbook (`render_report.single_sheet_copy`, other sheets stay in
the copy but hidden), LibreOffice opens the copy with a private profile on an Xvfb display of the
given size, and ImageMagick's `import` grabs the screen once the window has settled.

Needs `soffice` (LibreOffice Calc), `Xvfb`, `xdotool` and `import` (Debian: libreoffice-calc,
xvfb, xdotool, imagemagick).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from render_report import RenderError, safe_name, single_sheet_copy  # noqa: E402

DISPLAY = ":77"


def _need(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        raise RenderError(f"{program} is not on the PATH")
    return found


def _wait_for_window(display: dict[str, str], title: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = subprocess.run([_need("xdotool"), "search", "--name", title], env=display,
                               capture_output=True, text=True)
        ids = found.stdout.split()
        if ids:
            return ids[-1]
        time.sleep(0.5)
    raise RenderError(f"no LibreOffice window titled {title!r} appeared within {timeout:.0f} s")


def screenshot(report: Path, sheet: str, out: Path, *, size: str = "1600x1000", settle: float = 6.0) -> Path:
    width, height = (int(part) for part in size.lower().split("x"))
    with tempfile.TemporaryDirectory(prefix="qareport-shot-") as scratch:
        work = Path(scratch)
        copy = work / f"{safe_name(sheet)}.xlsx"
        single_sheet_copy(report, sheet, copy, hide_others=False)
        env = {**os.environ, "DISPLAY": DISPLAY}
        xvfb = subprocess.Popen([_need("Xvfb"), DISPLAY, "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        office = None
        try:
            time.sleep(1.0)
            office = subprocess.Popen(
                [_need("soffice"), f"-env:UserInstallation={(work / 'profile').as_uri()}", "--norestore",
                 "--nologo", "--calc", str(copy)],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            window = _wait_for_window(env, copy.stem, timeout=240)  # a busy machine starts LibreOffice slowly
            subprocess.run([_need("xdotool"), "windowsize", window, str(width), str(height)], env=env)
            subprocess.run([_need("xdotool"), "windowmove", window, "0", "0"], env=env)
            time.sleep(settle)
            out.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([_need("import"), "-window", "root", str(out)], env=env, check=True)
        finally:
            if office is not None:
                office.terminate()
                try:
                    office.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    office.kill()
            xvfb.terminate()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--sheet", default="Summary")
    parser.add_argument("--size", default="1600x1000", help="screen size in pixels (default 1600x1000)")
    parser.add_argument("--out", type=Path, help="the PNG (default: <report>-<sheet>.png)")
    args = parser.parse_args(argv)
    out = args.out or args.report.with_name(f"{args.report.stem}-{safe_name(args.sheet)}.png")
    try:
        print(screenshot(args.report, args.sheet, out, size=args.size))
    except (RenderError, OSError, subprocess.SubprocessError, ValueError) as error:
        print(f"screenshot: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
