// Starts the real `python -m adil serve` on the stub engine for the tests:
// the stub's "model" is a JSON script (native/stub/stub_script.h) written
// to a temporary file.  Needs ADIL_LIBRARY_DIR (a build's lib directory,
// holding libadil_stub.so); PYTHONPATH gets the repository's src/.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** Why the service tests cannot run here, or null. */
export function unavailable() {
  if (!process.env.ADIL_LIBRARY_DIR) return "ADIL_LIBRARY_DIR is not set (the stub engine's directory)";
  return null;
}

/**
 * Starts `adil serve` with `script` as the stub model; resolves once it
 * printed its `listening on URL` line.  `args`: extra CLI arguments.
 */
export async function startServe(script, args = []) {
  const dir = mkdtempSync(path.join(tmpdir(), "adil-node-"));
  const model = path.join(dir, "script.json");
  writeFileSync(model, JSON.stringify(script));
  // The stub engine, unless `args` names another library.
  const library = args.includes("--library") ? []
    : ["--library", path.join(process.env.ADIL_LIBRARY_DIR, "libadil_stub.so")];
  const pythonPath = [path.join(REPO_ROOT, "src"), process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
  const child = spawn(process.env.PYTHON ?? "python3",
    ["-m", "adil", "serve", ...library, "--model", model, "--port", "0", ...args],
    { cwd: REPO_ROOT, env: { ...process.env, PYTHONPATH: pythonPath }, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text) => { stderr = (stderr + text).slice(-4000); });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const lines = readline.createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`adil serve printed no URL in 30 s: ${stderr}`)), 30_000);
    lines.once("line", (line) => {
      clearTimeout(timer);
      const match = /listening on (http:\/\/\S+)/.exec(line);
      if (match) resolve(match[1].replace(/\/+$/, ""));
      else reject(new Error(`unexpected first line from adil serve: ${line}`));
    });
    exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`adil serve exited (${code}) before listening: ${stderr}`));
    });
  });
  lines.on("line", () => {}); // keep draining the console (load progress)
  return {
    url,
    child,
    stderr: () => stderr,
    /** Stops the server (SIGTERM, then SIGKILL) and removes its files. */
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
