// Packs the library and imports it from a fresh Effect 3 application: the
// tarball's own files, its exports map and its type declarations.
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" })

const app = mkdtempSync(join(tmpdir(), "effect-a2a-app-"))
try {
  run("npm", ["run", "--silent", "build"], root)
  const tarball = run("npm", ["pack", "--silent", "--pack-destination", app], root).trim().split("\n").at(-1)
  const modules = join(app, "node_modules")
  mkdirSync(join(modules, "effect-a2a"), { recursive: true })
  run("tar", ["-xzf", join(app, tarball), "-C", join(modules, "effect-a2a"), "--strip-components=1"], app)
  // The application brings its own Effect 3 (a peer dependency) and the
  // library's dependencies: link those of this checkout rather than download.
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
  for (const dep of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies), "@types/node", "typescript"]) {
    const target = join(modules, dep)
    mkdirSync(join(target, ".."), { recursive: true })
    symlinkSync(join(root, "node_modules", dep), target, "dir")
  }
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", type: "module", private: true }))
  writeFileSync(
    join(app, "main.ts"),
    [
      `import { Effect, Option } from "effect"`,
      `import { A2AClientError, RemoteAgent, RemoteOutcome } from "effect-a2a"`,
      `import * as Direct from "effect-a2a/RemoteOutcome"`,
      `const program = Effect.gen(function*() {`,
      `  const agent = yield* RemoteAgent.make({ name: "nowhere", url: "http://127.0.0.1:9", onCardFailure: "degrade" })`,
      `  const error = yield* Effect.flip(agent.send("hello"))`,
      `  const reason: A2AClientError.Reason = error.reason`,
      `  return [reason, Option.getOrNull(Direct.extractErrorId("(error_id: 0123456789ab)")), typeof RemoteOutcome.$match]`,
      `})`,
      `export const main = program`
    ].join("\n")
  )
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { strict: true, module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", noEmit: true, types: ["node"], skipLibCheck: false, exactOptionalPropertyTypes: true },
      files: ["main.ts"]
    })
  )
  run(join(modules, "typescript", "bin", "tsc"), ["-p", "."], app)
  writeFileSync(
    join(app, "run.mjs"),
    `import { Effect, Logger, LogLevel } from "effect"
import { A2AClientError, RemoteAgent } from "effect-a2a"
const agent = await Effect.runPromise(RemoteAgent.make({ name: "nowhere", url: "http://127.0.0.1:9", onCardFailure: "degrade" }).pipe(Logger.withMinimumLogLevel(LogLevel.None)))
const error = await Effect.runPromise(Effect.flip(agent.send("hello")).pipe(Logger.withMinimumLogLevel(LogLevel.None)))
if (!(error instanceof A2AClientError.A2AClientError) || error.reason !== "Unavailable") throw new Error("unexpected: " + error)
// Only public modules are exported: an internal path, of any room, does not resolve.
const closed = []
for (const internal of ["effect-a2a/internal/wire/errorId", "effect-a2a/cli/probe", "effect-a2a/demo/travel"]) {
  closed.push(await import(internal).then(() => "imported", (error) => error.code))
}
console.log(JSON.stringify({ tarball: ${JSON.stringify(tarball)}, reason: error.reason, delivery: error.delivery, closed }))
`
  )
  // The package's bin runs from the tarball too.
  const version = run("node", [join(modules, "effect-a2a", "dist", "bin.js"), "--version"], app).trim()
  if (!version.includes(pkg.version)) throw new Error(`effect-a2a --version printed ${JSON.stringify(version)}`)
  // The package ships no src/: its source maps hold the sources, so a stack trace through it can be mapped.
  const dist = join(modules, "effect-a2a", "dist")
  const maps = readdirSync(dist).filter((file) => file.endsWith(".js.map"))
  if (maps.length === 0) throw new Error("the package has no source maps")
  for (const file of maps) {
    const { sources, sourcesContent } = JSON.parse(readFileSync(join(dist, file), "utf8"))
    const inlined = sources.every((source, i) => sourcesContent?.[i] === readFileSync(resolve(root, "dist", source), "utf8"))
    if (!inlined) throw new Error(`dist/${file} does not hold its sources`)
  }
  // A CommonJS application. The package is ESM-only: TypeScript refuses a static import of it (a require) under every
  // resolution such a project may use, as Node refuses the require at run time; `import()` is the way in, and works.
  const cjs = join(app, "cjs")
  mkdirSync(cjs)
  writeFileSync(join(cjs, "package.json"), JSON.stringify({ name: "cjs-app", type: "commonjs", private: true }))
  writeFileSync(join(cjs, "required.ts"), `import { RemoteOutcome } from "effect-a2a"\nexport const matcher = typeof RemoteOutcome.$match\n`)
  writeFileSync(join(cjs, "imported.ts"), `export const load = () => import("effect-a2a").then((m) => typeof m.RemoteOutcome.$match)\n`)
  const resolutions = { node10: { module: "commonjs" }, node16: { module: "node16", moduleResolution: "node16" }, nodenext: { module: "nodenext", moduleResolution: "nodenext" } }
  // "compiled", or the error codes tsc gave.
  const compile = (resolution, file) => {
    const config = `tsconfig.${resolution}.${file}.json`
    // Only the resolution is in question: the libraries' own declarations were checked above.
    const compilerOptions = { ...resolutions[resolution], strict: true, target: "ES2022", noEmit: true, skipLibCheck: true, types: ["node"] }
    writeFileSync(join(cjs, config), JSON.stringify({ compilerOptions, files: [file] }))
    try {
      run(join(modules, "typescript", "bin", "tsc"), ["-p", config], cjs)
      return "compiled"
    } catch (error) {
      return [...new Set(String(error.stdout).match(/TS\d+/g))]
    }
  }
  const commonjs = {
    required: Object.fromEntries(Object.keys(resolutions).map((resolution) => [resolution, compile(resolution, "required.ts")])),
    imported: compile("nodenext", "imported.ts")
  }
  writeFileSync(
    join(cjs, "run.js"),
    `let required
try { require("effect-a2a"); required = "loaded" } catch (error) { required = error.code }
import("effect-a2a").then((m) => console.log(JSON.stringify({ required, imported: typeof m.RemoteOutcome.$match })))
`
  )
  const ran = JSON.parse(run("node", ["run.js"], cjs))
  const result = JSON.parse(run("node", ["run.mjs"], app))
  process.stdout.write(JSON.stringify({ ...result, commonjs: { ...commonjs, ran } }) + "\n")
} finally {
  rmSync(app, { recursive: true, force: true })
}
