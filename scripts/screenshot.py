#!/usr/bin/env python3
"""Take screenshots of workbook sheets as an analyst first sees them: the real LibreOffice Calc
window, filling a virtual screen, at 100 % zoom.

    python scripts/screenshot.py report.xlsx --sheet Overview [--sheet Details ...] [--size 1600x1000] [--outdir DIR]

A PDF shows how a sheet prints; only the window shows what fits in one screen. For each sheet the
sheet is made the active one in a copy of the workbook (`sheet_copies.single_sheet_copy`, other
sheets stay in the copy but hidden), and LibreOffice opens the copy with a private profile on one
Xvfb display of the given size, shared by all the sheets. With no window manager the window fills
the screen. Once the screen has stopped changing, it is read from Xvfb's frame buffer file
(`-fbdir`, an XWD image) and written as a PNG; LibreOffice is closed (and waited for) before the
next sheet, and Xvfb at the end.

Needs `soffice` (LibreOffice Calc), `Xvfb` and `xwininfo` (Debian: libreoffice-calc, xvfb,
x11-utils). Nothing else: no window manager, ImageMagick or xdotool.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sheet_copies import RenderError, safe_name, single_sheet_copy


def _need(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        raise RenderError(f"{program} is not on the PATH")
    return found


def _stop(process: subprocess.Popen[bytes], *, group: bool = False, timeout: float = 15) -> None:
    """End a process this script started (with `group`, the session it leads: LibreOffice's
    launcher starts soffice.bin as its child) and wait until it is gone."""
    if process.poll() is not None:
        return
    try:
        if group:
            os.killpg(process.pid, signal.SIGTERM)
        else:
            process.terminate()
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        if group:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
        process.wait()
    except ProcessLookupError:
        process.wait()


@contextmanager
def virtual_screen(size: str, folder: Path) -> Iterator[tuple[str, Path]]:
    """An Xvfb display on a free number (Xvfb picks it: `-displayfd`) whose screen is mirrored in
    a file; yields the display name and that file. Stopped, and waited for, on leaving: a display
    left behind still holds its number when the next one starts. `-noreset`: by default Xvfb
    resets whenever its last client leaves, and a client connecting meanwhile (LibreOffice's
    launcher leaves just before soffice.bin connects) is refused."""
    width, height = _size(size)
    read_end, write_end = os.pipe()
    xvfb = subprocess.Popen(
        [_need("Xvfb"), "-displayfd", str(write_end), "-screen", "0", f"{width}x{height}x24",
         "-nolisten", "tcp", "-noreset", "-fbdir", str(folder)],
        pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_end)
    try:
        number = b""
        deadline = time.monotonic() + 30
        while not number.endswith(b"\n"):
            ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(read_end, 16) if ready else b""
            if not chunk:
                raise RenderError("Xvfb did not start (no display number within 30 s)")
            number += chunk
        yield f":{number.decode().strip()}", folder / "Xvfb_screen0"
    finally:
        os.close(read_end)
        _stop(xvfb)


def _size(size: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in size.lower().split("x"))
    except ValueError:
        raise RenderError(f"--size must be WIDTHxHEIGHT in pixels (got {size!r})") from None
    return width, height


def _window_shown(display: str, title: str) -> bool:
    listing = subprocess.run([_need("xwininfo"), "-root", "-tree"], env={**os.environ, "DISPLAY": display},
                             capture_output=True, text=True)
    return f'"{title}' in listing.stdout


def _ended(office: subprocess.Popen[bytes], log: Path) -> bool:
    """False while LibreOffice runs; once it has ended without showing its window, an error."""
    if office.poll() is None:
        return False
    said = log.read_text(errors="replace").strip().splitlines()
    raise RenderError(f"LibreOffice ended (status {office.returncode}) without showing the sheet"
                      + (f": {said[-1]}" if said else ""))


def _wait_until(condition: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RenderError(f"{what} within {timeout:.0f} s")
        time.sleep(0.5)


def _wait_for_stillness(screen: Path, *, still: float, timeout: float) -> None:
    """Until the screen has not changed for `still` seconds (LibreOffice draws in stages)."""
    last, since, deadline = b"", time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        digest = hashlib.blake2b(screen.read_bytes(), digest_size=16).digest()
        if digest != last:
            last, since = digest, time.monotonic()
        elif time.monotonic() - since >= still:
            return
        time.sleep(0.5)


def xwd_to_png(xwd: bytes) -> bytes:
    """A PNG of an XWD image of a 24- or 32-bit true-colour screen (what Xvfb's frame buffer holds)."""
    header = struct.unpack(">25I", xwd[:100])
    header_size, width, height, byte_order = header[0], header[4], header[5], header[7]
    bits_per_pixel, bytes_per_line, colours = header[11], header[12], header[19]
    if bits_per_pixel != 32 or header[14:17] != (0xFF0000, 0xFF00, 0xFF):
        raise RenderError(f"the screen is not 24-bit true colour ({bits_per_pixel} bits per pixel)")
    start = header_size + colours * 12
    red, green, blue = (2, 1, 0) if byte_order == 0 else (1, 2, 3)  # LSB first: B G R x
    rows = bytearray()
    for y in range(height):
        line = xwd[start + y * bytes_per_line: start + y * bytes_per_line + width * 4]
        pixels = bytearray(width * 3)
        pixels[0::3], pixels[1::3], pixels[2::3] = line[red::4], line[green::4], line[blue::4]
        rows += b"\x00" + pixels

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes(rows), 6)) + chunk(b"IEND", b""))


def screenshots(report: Path, sheets: Sequence[str], outdir: Path, *, size: str = "1600x1000",
                still: float = 3.0) -> list[Path]:
    """One PNG per sheet, `outdir/<sheet>-screen.png`, taken one after the other on one display."""
    _size(size)
    soffice = _need("soffice")
    _need("xwininfo")
    outdir.mkdir(parents=True, exist_ok=True)
    taken = []
    with tempfile.TemporaryDirectory(prefix="qareport-shot-") as scratch:
        work = Path(scratch)
        with virtual_screen(size, work) as (display, screen):
            for sheet in sheets:
                copy = work / f"{safe_name(sheet)}.xlsx"
                single_sheet_copy(report, sheet, copy, hide_others=False)
                log = work / "soffice.log"
                with log.open("wb") as output:
                    office = subprocess.Popen(
                        [soffice, f"-env:UserInstallation={(work / 'profile').as_uri()}", "--norestore",
                         "--nologo", "--calc", str(copy)],
                        env={**os.environ, "DISPLAY": display}, stdout=output, stderr=output,
                        start_new_session=True)
                try:  # a busy machine starts LibreOffice slowly
                    _wait_until(lambda: _window_shown(display, copy.name) or _ended(office, log),  # noqa: B023 - called now
                                f"no LibreOffice window showing {copy.name} appeared", timeout=240)
                    _wait_for_stillness(screen, still=still, timeout=60)
                    out = outdir / f"{safe_name(sheet)}-screen.png"
                    out.write_bytes(xwd_to_png(screen.read_bytes()))
                    taken.append(out)
                finally:
                    _stop(office, group=True)
                copy.unlink()
    return taken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--sheet", action="append", dest="sheets", metavar="NAME",
                        help="the sheet to show (repeatable; default: Summary)")
    parser.add_argument("--size", default="1600x1000", help="screen size in pixels (default 1600x1000)")
    parser.add_argument("--outdir", type=Path, help="where the PNGs go (default: the report's folder)")
    args = parser.parse_args(argv)
    try:
        for path in screenshots(args.report, args.sheets or ["Summary"], args.outdir or args.report.parent,
                                size=args.size):
            print(path)
    except (RenderError, OSError, subprocess.SubprocessError) as error:
        print(f"screenshot: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
