// .ci/layers.mjs, the import-cycle check CI runs on both crates: run on small crates written to a
// temp folder, as CI runs it (a child process, its exit code and report).
import { test } from "node:test"
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const script = join(dirname(fileURLToPath(import.meta.url)), "..", ".ci", "layers.mjs")

function crate(files) {
  const dir = mkdtempSync(join(tmpdir(), "layers-"))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  return dir
}

function check(files) {
  const dir = crate(files)
  try {
    const r = spawnSync(process.execPath, [script, dir], { encoding: "utf8" })
    return { status: r.status, out: r.stdout + r.stderr }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

test("a crate whose imports run one way has no cycle", () => {
  const r = check({
    "lib.rs": "pub mod a;\npub mod b;\n",
    "a.rs": "use crate::b::thing;\n",
    "b.rs": "pub fn thing() {}\n",
  })
  assert.equal(r.status, 0, r.out)
  assert.match(r.out, /3 modules, \d+ imports, no cycle/)
})

test("two files importing each other are a cycle, named file by file", () => {
  const r = check({
    "lib.rs": "pub mod a;\npub mod b;\n",
    "a.rs": "use crate::b::thing;\npub fn other() {}\n",
    "b.rs": "pub fn thing() { crate::a::other() }\n",
  })
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /1 import cycle/)
  assert.match(r.out, /a\.rs -> b\.rs/)
  assert.match(r.out, /b\.rs -> a\.rs/)
})

test("an import renamed with `as` reaches the module it names, not its parent", () => {
  // serve/a.rs -> serve/lease.rs -> serve/a.rs, with the lease imported as `le`: before the fix the
  // alias was glued to the name (`leaseasle`, cut at "as" to "le") and the edge went to serve/mod.rs.
  const r = check({
    "lib.rs": "pub mod serve;\n",
    "serve/mod.rs": "pub mod a;\npub mod lease;\n",
    "serve/a.rs": "use crate::serve::lease as le;\npub fn agent() {}\nfn f() { le::x() }\n",
    "serve/lease.rs": "pub fn x() { super::a::agent() }\n",
  })
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /serve\/a\.rs -> serve\/lease\.rs/)
  assert.match(r.out, /serve\/lease\.rs -> serve\/a\.rs/)
})

test("aliases inside a use tree are read too", () => {
  const r = check({
    "lib.rs": "pub mod a;\npub mod task;\n",
    "a.rs": "use crate::{task as t, task::{one as uno, two}};\npub fn back() {}\n",
    "task.rs": "pub fn one() {}\npub fn two() { crate::a::back() }\n",
  })
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /a\.rs -> task\.rs/)
})

test("a unit-test module's imports do not count, nor comments or strings", () => {
  const r = check({
    "lib.rs": "pub mod a;\npub mod b;\n",
    "a.rs": "use crate::b::thing;\n",
    "b.rs": [
      "pub fn thing() {}",
      "// use crate::a::nothing;",
      'const S: &str = "crate::a::x";',
      "#[cfg(test)]",
      "mod tests {",
      "    use crate::a::*;",
      "    fn t() { { } }",
      "}",
      "",
    ].join("\n"),
  })
  assert.equal(r.status, 0, r.out)
})

test("`super` in a mod.rs is the module itself; in a file it is the parent", () => {
  const r = check({
    "lib.rs": "pub mod m;\npub mod top;\n",
    "m/mod.rs": "pub mod inner;\nuse super::top::f;\n",
    "m/inner.rs": "pub fn g() { super::h() }\n",
    "top.rs": "pub fn f() { crate::m::inner::g() }\n",
  })
  // m/mod.rs -> top.rs -> m/inner.rs -> m/mod.rs: a cycle of three.
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /cycle of 3/)
})

test("the project's own crates have no cycle", () => {
  const root = join(dirname(script), "..")
  const r = spawnSync(process.execPath, [script], { cwd: root, encoding: "utf8" })
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.match(r.stdout, /crates\/core\/src: \d+ modules, \d+ imports, no cycle/)
})
