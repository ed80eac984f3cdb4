// Packs the library and imports it from a fresh Effect 3 application: the
// tarball's own files, its exports map and its type declarations. The
// application first has only what a user must install (the dependencies and
// the peers that are not optional): a client and a memory-store server run
// with that alone; the optional peers join it afterwards.
import { execFileSync, spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import ts from "typescript"
import { leanInstall } from "./leanInstall.mjs"

const root = resolve(import.meta.dirname, "..")
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" })

// The application's type checks run here, one program each, rather than as one tsc process each: the declarations
// they share (TypeScript's libs, @types/node, Effect's and the package's own) are parsed once, not six times.
// A parsed file is shared only between programs that would have parsed it alike: the same target and module
// format for it, and the same options that decide whether a file is a module. All the programs are strict, which
// the binder reads once a file is shared.
const parsedFiles = new Map()
const shared = (getSourceFile, options) => (fileName, languageVersionOrOptions, onError, shouldCreate) => {
  const { impliedNodeFormat, jsDocParsingMode, languageVersion } = typeof languageVersionOrOptions === "object"
    ? languageVersionOrOptions
    : { languageVersion: languageVersionOrOptions }
  const key = JSON.stringify([
    fileName,
    languageVersion,
    impliedNodeFormat,
    jsDocParsingMode,
    options.module,
    options.moduleDetection,
    options.jsx,
    options.strict,
    options.alwaysStrict
  ])
  let file = parsedFiles.get(key)
  if (file === undefined) {
    file = getSourceFile(fileName, languageVersionOrOptions, onError, shouldCreate)
    if (file !== undefined) parsedFiles.set(key, file)
  }
  return file
}

// The application brings its own Effect 3 (a peer dependency) and the library's dependencies, linked from this
// checkout rather than downloaded. A linked package finds its own dependencies beside its real path, in this
// checkout; the library finds only what is linked here.
const { app, link, remove, tarball } = leanInstall()
try {
  const modules = join(app, "node_modules")
  // What the tarball's manifest says a user may leave out, and what it requires (what leanInstall linked).
  const shipped = JSON.parse(readFileSync(join(modules, "effect-a2a", "package.json"), "utf8"))
  const optional = Object.keys(shipped.peerDependencies).filter((dep) =>
    shipped.peerDependenciesMeta?.[dep]?.optional === true
  )
  const required = [
    ...Object.keys(shipped.dependencies),
    ...Object.keys(shipped.peerDependencies).filter((dep) => !optional.includes(dep))
  ]
  for (const dep of ["@types/node", "typescript"]) link(dep)
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
      compilerOptions: {
        strict: true,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2022",
        noEmit: true,
        types: ["node"],
        skipLibCheck: false,
        exactOptionalPropertyTypes: true
      },
      files: ["main.ts"]
    })
  )
  // "compiled", or the error codes of what `tsc -p <config>` (with `options` on the command line) would report.
  const typecheck = (dir, config, options = {}) => {
    const parsed = ts.getParsedCommandLineOfConfigFile(join(dir, config), options, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
      }
    })
    const host = ts.createCompilerHost(parsed.options)
    host.getSourceFile = shared(host.getSourceFile, parsed.options)
    const program = ts.createProgram({
      rootNames: parsed.fileNames,
      options: parsed.options,
      host,
      configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(parsed)
    })
    const diagnostics = ts.getPreEmitDiagnostics(program)
    return diagnostics.length === 0 ? "compiled" : [...new Set(diagnostics.map((diagnostic) => `TS${diagnostic.code}`))]
  }
  writeFileSync(
    join(app, "run.mjs"),
    `import { Effect, Logger, LogLevel } from "effect"
import { A2AClientError, A2AServer, AgentExecutor, RemoteAgent } from "effect-a2a"
const agent = await Effect.runPromise(RemoteAgent.make({ name: "nowhere", url: "http://127.0.0.1:9", onCardFailure: "degrade" }).pipe(Logger.withMinimumLogLevel(LogLevel.None)))
const error = await Effect.runPromise(Effect.flip(agent.send("hello")).pipe(Logger.withMinimumLogLevel(LogLevel.None)))
if (!(error instanceof A2AClientError.A2AClientError) || error.reason !== "Unavailable") throw new Error("unexpected: " + error)
// A memory-store server on 127.0.0.1, and a message sent to it over JSON-RPC.
const served = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const server = yield* A2AServer.make({
    agent: () => Effect.succeed(AgentExecutor.completedText("served from the tarball")),
    card: { name: "lean", description: "installed with what it requires" }
  })
  const remote = yield* RemoteAgent.make({ name: "lean", url: server.url, transports: ["JSONRPC"] })
  const outcome = yield* remote.send("hello")
  return { host: new URL(server.url).hostname, transport: remote.transport, outcome: outcome._tag, text: outcome.text }
})).pipe(Logger.withMinimumLogLevel(LogLevel.None)))
// Only public modules are exported: an internal path, of any room, does not resolve.
const closed = []
for (const internal of ["effect-a2a/internal/wire/errorId", "effect-a2a/cli/probe", "effect-a2a/demo/travel"]) {
  closed.push(await import(internal).then(() => "imported", (error) => error.code))
}
console.log(JSON.stringify({ tarball: ${
      JSON.stringify(tarball)
    }, reason: error.reason, delivery: error.delivery, served, closed }))
`
  )
  // With what it requires alone: the client and the server run, and an application that skips the libraries'
  // declarations (as most do) type-checks.
  const result = JSON.parse(run("node", ["run.mjs"], app))
  const lean = typecheck(app, "tsconfig.json", { skipLibCheck: true })
  // The package's bin, without @effect/cli, says what to install.
  const bin = join(modules, "effect-a2a", "dist", "bin.js")
  const refused = spawnSync("node", [bin, "--version"], { cwd: app, encoding: "utf8" })
  const cli = { status: refused.status, said: refused.stderr.trim().split(": ")[1] }
  // Then every optional peer joins: the declarations check in full, and the bin runs.
  for (const dep of optional) link(dep)
  const full = typecheck(app, "tsconfig.json")
  const version = run("node", [bin, "--version"], app).trim()
  if (!version.includes(shipped.version)) throw new Error(`effect-a2a --version printed ${JSON.stringify(version)}`)
  // The package ships no src/: its source maps hold the sources, so a stack trace through it can be mapped.
  const dist = join(modules, "effect-a2a", "dist")
  const maps = readdirSync(dist).filter((file) => file.endsWith(".js.map"))
  if (maps.length === 0) throw new Error("the package has no source maps")
  for (const file of maps) {
    const { sources, sourcesContent } = JSON.parse(readFileSync(join(dist, file), "utf8"))
    const inlined = sources.every((source, i) =>
      sourcesContent?.[i] === readFileSync(resolve(root, "dist", source), "utf8")
    )
    if (!inlined) throw new Error(`dist/${file} does not hold its sources`)
  }
  // A CommonJS application. The package is ESM-only: TypeScript refuses a static import of it (a require) under every
  // resolution such a project may use, as Node refuses the require at run time; `import()` is the way in, and works.
  const cjs = join(app, "cjs")
  mkdirSync(cjs)
  writeFileSync(join(cjs, "package.json"), JSON.stringify({ name: "cjs-app", type: "commonjs", private: true }))
  writeFileSync(
    join(cjs, "required.ts"),
    `import { RemoteOutcome } from "effect-a2a"\nexport const matcher = typeof RemoteOutcome.$match\n`
  )
  writeFileSync(
    join(cjs, "imported.ts"),
    `export const load = () => import("effect-a2a").then((m) => typeof m.RemoteOutcome.$match)\n`
  )
  const resolutions = {
    node10: { module: "commonjs" },
    node16: { module: "node16", moduleResolution: "node16" },
    nodenext: { module: "nodenext", moduleResolution: "nodenext" }
  }
  const compile = (resolution, file) => {
    const config = `tsconfig.${resolution}.${file}.json`
    // Only the resolution is in question: the libraries' own declarations were checked above.
    const compilerOptions = {
      ...resolutions[resolution],
      strict: true,
      target: "ES2022",
      noEmit: true,
      skipLibCheck: true,
      types: ["node"]
    }
    writeFileSync(join(cjs, config), JSON.stringify({ compilerOptions, files: [file] }))
    return typecheck(cjs, config)
  }
  const commonjs = {
    required: Object.fromEntries(
      Object.keys(resolutions).map((resolution) => [resolution, compile(resolution, "required.ts")])
    ),
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
  process.stdout.write(
    JSON.stringify({ optional, required, ...result, typecheck: { lean, full }, cli, commonjs: { ...commonjs, ran } }) +
      "\n"
  )
} finally {
  remove()
}
