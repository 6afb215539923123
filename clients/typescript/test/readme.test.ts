/** The README's JavaScript block, run as it is (as a module of this package, so it imports
 * `hitl-client` by name) against the service: the person approves. */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { WAIT } from "./service.js";

const PACKAGE = fileURLToPath(new URL("../../", import.meta.url));

test("the README's example prints the person's decision", { timeout: WAIT }, async () => {
  const readme = await readFile(`${PACKAGE}README.md`, "utf8");
  const blocks = [...readme.matchAll(/^```js\n(.*?)^```/gms)].map((found) => found[1] ?? "");
  assert.equal(blocks.length, 1);
  const script = `${PACKAGE}dist/readme-example.mjs`;
  await writeFile(script, blocks[0]!);
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [script], { cwd: PACKAGE });
    assert.equal(stdout.trim(), "approved");
  } finally {
    await rm(script);
  }
});
