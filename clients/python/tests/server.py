"""Starts a real `cairn serve` for the tests (scripted model, SQLite in a temp dir).

CAIRN_BIN names the binary; without it the tests build ./cmd/cairn with Go.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import threading

ROOT = pathlib.Path(__file__).resolve().parents[3]
CONFIG = ROOT / "clients" / "testdata" / "cairn.yaml"


class Server:
    """A `cairn serve` process on a free loopback port."""

    def __init__(self, config: pathlib.Path = CONFIG):
        self.dir = tempfile.mkdtemp(prefix="cairn-py-")
        binary = os.environ.get("CAIRN_BIN")
        if not binary:
            binary = os.path.join(self.dir, "cairn")
            subprocess.run(["go", "build", "-o", binary, "./cmd/cairn"], cwd=ROOT, check=True)
        shutil.copy(config, os.path.join(self.dir, "cairn.yaml"))
        self.proc = subprocess.Popen(
            [binary, "serve", "--config", "cairn.yaml", "--addr", "127.0.0.1:0"],
            cwd=self.dir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = ""
        lines = []
        for line in self.proc.stderr:
            lines.append(line)
            m = re.match(r"^listening on (http://\S+)$", line.strip())
            if m:
                self.url = m.group(1)
                break
        if not self.url:
            self.proc.wait()
            raise RuntimeError("cairn serve exited before listening:\n" + "".join(lines))
        # Keep reading stderr so the server never blocks on a full pipe.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
