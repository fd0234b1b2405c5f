// Starts a real `cairn serve` for the tests (scripted model, SQLite in a
// temporary directory). CAIRN_BIN names the binary; without it the tests
// build ./cmd/cairn with Go.
import { spawn, execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

export const root = resolve(import.meta.dirname, "../../..");

export async function startServer(config = join(root, "clients/testdata/cairn.yaml")) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-"));
  let bin = process.env.CAIRN_BIN;
  if (!bin) {
    bin = join(dir, "cairn");
    execFileSync("go", ["build", "-o", bin, "./cmd/cairn"], { cwd: root, stdio: "inherit" });
  }
  copyFileSync(config, join(dir, "cairn.yaml"));
  const proc = spawn(bin, ["serve", "--config", "cairn.yaml", "--addr", "127.0.0.1:0"], {
    cwd: dir,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const lines = [];
  const url = await new Promise((ok, fail) => {
    const rl = createInterface({ input: proc.stderr });
    rl.on("line", (line) => {
      lines.push(line);
      const m = /^listening on (http:\/\/\S+)$/.exec(line);
      if (m) ok(m[1]);
    });
    proc.on("exit", (code) => fail(new Error(`cairn serve exited (${code}) before listening:\n${lines.join("\n")}`)));
  });
  return {
    url,
    stop() {
      proc.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
