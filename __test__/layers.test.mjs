// .ci/layers.mjs, the import checks CI runs on both crates (no cycle; the core's imports keep to the
// layer table of ARCHITECTURE.md): run on small crates written to a temp folder, as CI runs it (a
// child process, its exit code and report).
import { test } from "node:test"
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, cpSync, readFileSync, appendFileSync } from "node:fs"
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
  assert.match(r.stdout, /crates\/core\/src: every import keeps to the layers of ARCHITECTURE\.md/)
})

// The layer table: a crate under src/ and its table in A.md, checked with --layers.
const table = (rows) =>
  [
    "# Doc",
    "",
    "<!-- layers:begin -->",
    "| Layer | Modules | What |",
    "|---|---|---|",
    ...rows.map(([layer, mods]) => `| ${layer} | ${mods.map((m) => "`" + m + "`").join(", ")} | words |`),
    "<!-- layers:end -->",
    "",
  ].join("\n")

function layered(files, rows) {
  const all = { "A.md": rows === undefined ? "# no table\n" : table(rows) }
  for (const [path, text] of Object.entries(files)) all[join("src", path)] = text
  const dir = crate(all)
  try {
    const r = spawnSync(process.execPath, [script, "--layers", join(dir, "A.md"), join(dir, "src")], { encoding: "utf8" })
    return { status: r.status, out: r.stdout + r.stderr }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const three = {
  "lib.rs": "pub mod top;\npub mod mid;\npub mod low;\npub mod peer;\npub use mid::Thing;\n",
  "top.rs": "use crate::mid::Thing;\n",
  "mid.rs": "use crate::low::f;\npub struct Thing;\n",
  "low.rs": "pub fn f() {}\n",
  "peer.rs": "pub fn p() { crate::low::f() }\n",
}
const rows = [
  ["top", ["top"]],
  ["middle", ["mid"]],
  ["bottom", ["low", "peer"]],
]

test("imports that point down, or within a layer, keep to the table", () => {
  const r = layered({ ...three, "low.rs": "pub fn f() { crate::peer::p() }\n", "peer.rs": "pub fn p() {}\n" }, rows)
  assert.equal(r.status, 0, r.out)
  assert.match(r.out, /every import keeps to the layers of .*A\.md/)
})

test("an import of a higher layer fails, naming the file, the module and both layers", () => {
  const r = layered({ ...three, "peer.rs": "use crate::top;\npub fn p() {}\n" }, rows)
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /1 layering problem/)
  assert.match(r.out, /src\/peer\.rs \(layer "bottom"\) imports `top` \(`crate::top`, layer "top"\): a higher layer/)
  // No cycle: only the layering fails.
  assert.match(r.out, /no cycle/)
})

test("a name the crate root re-exports counts as an import of the module it comes from", () => {
  const r = layered({ ...three, "peer.rs": "pub fn p() -> Option<crate::Thing> { None }\n" }, rows)
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /peer\.rs \(layer "bottom"\) imports `mid` \(`crate::Thing`, layer "middle"\)/)
})

test("a module the table misses, and one it names that does not exist, fail", () => {
  const r = layered({ ...three, "lib.rs": three["lib.rs"] + "pub mod extra;\n", "extra/mod.rs": "" }, [...rows, ["ghosts", ["ghost"]]])
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /does not name the module `extra`/)
  assert.match(r.out, /names `ghost`, which is no module/)
})

test("a module in two layers fails; a document without the delimited table fails", () => {
  let r = layered(three, [...rows, ["again", ["mid"]]])
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /`mid` is in two layers \("middle" and "again"\)/)
  r = layered(three, undefined)
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /no <!-- layers:begin -->/)
})

test("a unit-test module kept in its own file (`#[cfg(test)] mod tests;`) is left out", () => {
  const r = layered(
    { ...three, "low.rs": "pub fn f() {}\n#[cfg(test)]\nmod tests;\n", "low/tests.rs": "use crate::top;\n" },
    rows,
  )
  assert.equal(r.status, 0, r.out)
})

test("--edges prints each top-level module's imports of the others", () => {
  const dir = crate(Object.fromEntries(Object.entries(three).map(([p, t]) => [join("src", p), t])))
  try {
    const r = spawnSync(process.execPath, [script, "--edges", join(dir, "src")], { encoding: "utf8" })
    assert.equal(r.status, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /: mid -> low\n/)
    assert.match(r.stdout, /: top -> mid\n/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test("the project's own table catches an upward import put into a copy of the core", () => {
  const root = join(dirname(script), "..")
  const dir = mkdtempSync(join(tmpdir(), "layers-"))
  try {
    cpSync(join(root, "crates", "core", "src"), join(dir, "src"), { recursive: true })
    writeFileSync(join(dir, "A.md"), readFileSync(join(root, "ARCHITECTURE.md")))
    const args = [script, "--layers", join(dir, "A.md"), join(dir, "src")]
    assert.equal(spawnSync(process.execPath, args).status, 0)
    // agents (below serving) reaching into serve: no cycle, an arrow pointing up.
    appendFileSync(join(dir, "src", "agents", "gate.rs"), "\nuse crate::serve::task::task_id;\n")
    const r = spawnSync(process.execPath, args, { encoding: "utf8" })
    assert.equal(r.status, 1, r.stdout + r.stderr)
    assert.match(r.stdout, /agents\/gate\.rs \(layer "agents"\) imports `serve` \(`crate::serve::task::task_id`, layer "serving"\): a higher layer/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
