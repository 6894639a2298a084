// `npm run pack:local` (scripts/pack-local.mjs): its two tarballs installed with real npm into fresh
// projects, against a registry that answers 404 to everything (as the real one does for the
// unpublished @toolnexus/binding-* packages; a local server, so nothing leaves the machine) and an
// empty cache of the test's own. The root tarball of a local pack depends on no platform package:
// an install asks the registry for none of them, and `npm ci` works after it. Installed alone, the
// loader's error names the platform tarball to install, not a registry package. And the loader's
// advice for the other ways toolnexus arrives (a checkout; the registry) is what they need.
import test from "node:test"
import assert from "node:assert/strict"
import { spawn, spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import http from "node:http"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { hostAbi, packLocal, rootManifest, tarballName } from "../scripts/pack-local.mjs"
import { optionalDependencies } from "../scripts/targets.mjs"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const PKG = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"))
const VERSION = PKG.version
const SCOPE = PKG.napi.packageName
const ABI = hostAbi()
const PLATFORM_PKG = `${SCOPE}-${ABI}`
const BUILT = path.join(ROOT, `toolnexus.${ABI}.node`)
const isWin = process.platform === "win32"

const work = mkdtempSync(path.join(os.tmpdir(), "toolnexus-packlocal-"))
test.after(() => rmSync(work, { recursive: true, force: true }))

// The registry: 404 for every request, each one recorded.
const requests = []
const registry = http.createServer((req, res) => {
  requests.push(decodeURIComponent(req.url))
  res.writeHead(404, { "content-type": "application/json" })
  res.end('{"error":"Not found"}')
})
let npmFlags = []
test.before(async () => {
  await new Promise((resolve) => registry.listen(0, "127.0.0.1", resolve))
  writeFileSync(path.join(work, "npmrc"), "")
  npmFlags = [
    `--registry=http://127.0.0.1:${registry.address().port}/`,
    `--cache=${path.join(work, "cache")}`,
    `--userconfig=${path.join(work, "npmrc")}`,
    "--no-audit",
    "--no-fund",
    "--no-update-notifier",
  ]
})
test.after(() => registry.close())

/** A command run without blocking this process (the registry answers from it). */
function run(cmd, args, cwd) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, shell: isWin, env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: "" } })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    const timer = setTimeout(() => child.kill(), 120_000)
    child.on("close", (status) => {
      clearTimeout(timer)
      resolve({ status, stdout, stderr, out: `${cmd} ${args.join(" ")}\n${stdout}\n${stderr}` })
    })
  })
}
const npm = (args, cwd) => run("npm", [...args, ...npmFlags], cwd)
const nodeEval = (code, cwd) => run(process.execPath, ["-e", code], cwd)

function project(name) {
  const dir = path.join(work, name)
  mkdirSync(dir)
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true }, null, 2))
  return dir
}

const platformRequests = () => requests.filter((u) => u.includes(SCOPE))

// Packed once: the root tarball and this host's platform tarball, the local form.
let packed
const tarballs = path.join(work, "pack")
function pack() {
  if (!packed) {
    assert.ok(existsSync(BUILT), `${BUILT} is missing: npm run build first`)
    packed = packLocal(tarballs)
  }
  return packed
}

test("pack:local names its tarballs as npm pack does, and its root tarball is the local form", () => {
  const p = pack()
  assert.equal(p.abi, ABI)
  assert.equal(p.root.file, path.join(tarballs, tarballName(PKG.name, VERSION)))
  assert.equal(p.platform.file, path.join(tarballs, tarballName(PLATFORM_PKG, VERSION)))
  assert.equal(path.basename(p.platform.file), `${SCOPE.slice(1).replace("/", "-")}-${ABI}-${VERSION}.tgz`)
  const r = spawnSync("tar", ["-xzOf", p.root.file, "package/package.json"], { encoding: "utf8" })
  assert.equal(r.status, 0, r.stderr)
  const manifest = JSON.parse(r.stdout)
  assert.equal(manifest.optionalDependencies, undefined, "a local pack depends on no platform package")
  assert.deepEqual(manifest.toolnexus, { localPack: true, packDir: tarballs })
  assert.equal(manifest.private, true, "npm refuses to publish it")
  assert.equal(manifest.version, VERSION)
})

test("both tarballs install in a fresh project without asking the registry for a platform package, and npm ci works after", async () => {
  const p = pack()
  const dir = project("both")
  requests.length = 0
  let r = await npm(["install", p.root.file, p.platform.file], dir)
  assert.equal(r.status, 0, r.out)
  const lock = JSON.parse(readFileSync(path.join(dir, "package-lock.json"), "utf8"))

  rmSync(path.join(dir, "node_modules"), { recursive: true, force: true })
  r = await npm(["ci"], dir)
  assert.doesNotMatch(r.stderr, /Missing: /)
  assert.equal(r.status, 0, r.out)
  assert.equal(lock.packages["node_modules/toolnexus"].optionalDependencies, undefined, "the lock file records no optional dependency")
  assert.ok(lock.packages[`node_modules/${PLATFORM_PKG}`], "the platform package is in the lock file")
  assert.deepEqual(platformRequests(), [], "no request for an @toolnexus/binding-* package")
  r = await nodeEval(`console.log(require("toolnexus").sanitize("a b"))`, dir)
  assert.equal(r.status, 0, r.out)
  assert.equal(r.stdout.trim(), "a_b")
})

test("the root tarball alone: the loader names the platform tarball pack:local wrote, and that fix works", async () => {
  const p = pack()
  const dir = project("root-only")
  requests.length = 0
  let r = await npm(["install", p.root.file], dir)
  assert.equal(r.status, 0, r.out)
  assert.deepEqual(platformRequests(), [])

  r = await nodeEval(`require("toolnexus")`, dir)
  assert.notEqual(r.status, 0)
  const message = r.stderr
  assert.match(message, /toolnexus: the native addon for .* is not installed\./)
  assert.ok(message.includes(`Fix: npm install ${p.platform.file}\n`), message)
  assert.ok(message.includes("npm run pack:local"), message)
  assert.ok(message.includes("build from source"), message)
  assert.ok(!message.includes(`npm install ${SCOPE}-`), `no registry package to install:\n${message}`)
  assert.ok(message.includes("Supported: "), message)

  // The advice, followed.
  r = await npm(["install", p.platform.file], dir)
  assert.equal(r.status, 0, r.out)
  r = await nodeEval(`console.log(require("toolnexus").sanitize("a b"))`, dir)
  assert.equal(r.status, 0, r.out)
  assert.equal(r.stdout.trim(), "a_b")
  assert.deepEqual(platformRequests(), [])
})

test("the release form keeps every platform package pinned, and passes the prepack check; the local form would not", () => {
  const check = (manifest) => {
    const dir = mkdtempSync(path.join(work, "manifest-"))
    writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest))
    return spawnSync(process.execPath, [path.join(ROOT, "scripts", "check-pack.mjs")], { cwd: dir, encoding: "utf8" })
  }
  const release = rootManifest(PKG, { release: true })
  assert.deepEqual(release.optionalDependencies, optionalDependencies(PKG))
  assert.equal(Object.keys(release.optionalDependencies).length, PKG.napi.targets.length)
  assert.equal(release.private, undefined)
  assert.equal(release.toolnexus, undefined)
  assert.equal(check(release).status, 0)

  const local = rootManifest(PKG, { out: "/somewhere/pack" })
  assert.equal(local.optionalDependencies, undefined)
  assert.deepEqual(local.toolnexus, { localPack: true, packDir: "/somewhere/pack" })
  assert.equal(local.private, true)
  assert.notEqual(check(local).status, 0)
})

// The loader's advice in temporary copies of the package (as __test__/loader.test.mjs makes them).
function copy(manifest, setup = () => {}) {
  const dir = mkdtempSync(path.join(work, "copy-"))
  for (const f of ["index.js", "dist", "loader.js"]) cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true })
  writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest))
  setup(dir)
  const r = spawnSync(process.execPath, ["-e", `require("./index.js")`], { cwd: dir, encoding: "utf8", env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: "" } })
  assert.notEqual(r.status, 0, "it does not load")
  return { dir, message: r.stderr }
}

test("a local pack whose pack directory is gone: the advice names the tarball's file under the checkout's pack/", () => {
  const { message } = copy(rootManifest(PKG, { out: path.join(work, "no-such-dir") }))
  assert.ok(message.includes(`Fix: npm install ${path.join("<toolnexus-rs>", "pack", tarballName(PLATFORM_PKG, VERSION))}\n`), message)
  assert.ok(!message.includes(`npm install ${SCOPE}-`), message)
})

test("a local pack with a damaged platform package: reinstall it from the tarball", () => {
  const p = pack()
  const { dir, message } = copy(rootManifest(PKG, { out: tarballs }), (d) => {
    const pdir = path.join(d, "node_modules", ...PLATFORM_PKG.split("/"))
    mkdirSync(pdir, { recursive: true })
    const meta = JSON.parse(readFileSync(path.join(ROOT, "npm", ABI, "package.json"), "utf8"))
    writeFileSync(path.join(pdir, "package.json"), JSON.stringify(meta))
    writeFileSync(path.join(pdir, meta.main), "damaged")
  })
  assert.ok(message.includes(`failed to load`), message)
  assert.ok(message.includes(`Fix: reinstall the platform package: npm install --force ${p.platform.file}`), `${dir}\n${message}`)
})

test("a checkout (beside Cargo.toml, or a directory npm install linked to) without a build: build it", () => {
  const { dir, message } = copy(PKG, (d) => writeFileSync(path.join(d, "Cargo.toml"), "[workspace]\n"))
  assert.match(message, /toolnexus: the native addon for .* is not installed\./)
  assert.ok(message.includes(`Fix: npm run build in ${realpathSync(dir)} (Rust stable, Node >= 20).`), message)
  assert.ok(!message.includes(`npm install ${SCOPE}-`), message)
})

test("installed as published (optionalDependencies, no local-pack mark): the registry advice stays", () => {
  const { message } = copy(rootManifest(PKG, { release: true }))
  assert.ok(message.includes(`Fix: npm install ${PLATFORM_PKG}@${VERSION}\n`), message)
  assert.ok(message.includes("(an optional dependency of toolnexus)"), message)
  assert.ok(message.includes("--omit=optional"), message)
})
