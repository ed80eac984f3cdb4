/**
 * The rooms of `src` and which may import which (issue #43): every import between two rooms is one the rule below
 * allows, the rule has no cycle, no two files import each other's values in a circle, and internal code imports the
 * public service modules only as types. docs/internals.md names every file under `src/internal` in its room's row
 * and describes both request paths; the README's "How it is built" names every room.
 *
 * A room is a folder of `src/internal` (`client/call`, `server/edge`, `wire`, …); a file directly in `src/internal`
 * is a room of its own (`errors.ts`). Outside it: `public`, the public modules (and the index), which may import any
 * internal room; `cli`, the command line and the worked example (`Cli.ts`, `bin.ts`, `cli/`, `demo/`), users of the
 * public modules. The public data and error modules (`Part`, `RemoteOutcome`, …) are in `wire`'s room: they are the
 * vocabulary `wire/` reads and writes, each built on the other's files (`Part.ts` on `wire/json.ts`, `wire/parts.ts`
 * on `Part.ts`), so apart they would make a cycle of rooms where the files have none.
 *
 * Type-only imports follow the rule as value imports do (they name the same dependency of one concern on another),
 * but for one house rule: internal code may import any public module as a type, never a service module's values.
 * Dynamic `import()`s count as value imports; the check of file cycles reads static value imports only, as Node
 * loads them (a dynamic import is loaded later, so it closes no cycle), as `import-graph.mjs` does.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")
const src = path.join(root, "src")

/**
 * The rule: each room and the rooms it may import. It has no cycle, so a room that may import another is below it
 * for good. Change it when a new room or a new dependency is meant, not to let a stray import through.
 */
const rooms: Record<string, ReadonlyArray<string>> = {
  "match.ts": [],
  "errors.ts": [],
  "lazyModule.ts": [],
  "peer.ts": [],
  "listen.ts": [],
  wire: ["match.ts"],
  "serverErrors.ts": ["wire"],
  "progress.ts": ["wire"],
  observability: [],
  ledger: ["peer.ts"],
  authentication: ["wire"],
  "client/call": ["wire", "observability", "ledger"],
  "client/transport": ["client/call", "wire", "peer.ts"],
  "client/card": ["client/call", "client/transport", "wire"],
  "client/push": ["client/call", "wire", "listen.ts"],
  "client/resilience": ["client/call", "wire", "errors.ts"],
  client: ["client/call", "client/transport", "client/card", "client/push", "wire"],
  agent: ["client", "client/call", "client/resilience", "wire", "lazyModule.ts"],
  "server/caller": ["authentication", "observability", "serverErrors.ts", "wire"],
  "server/durable": ["server/caller", "serverErrors.ts", "progress.ts", "wire"],
  "server/store": ["server/caller", "server/durable", "serverErrors.ts", "peer.ts", "ledger", "wire"],
  "server/run": [
    "server/caller",
    "server/durable",
    "server/store",
    "observability",
    "serverErrors.ts",
    "errors.ts",
    "progress.ts",
    "wire"
  ],
  "server/handler": [
    "server/caller",
    "server/durable",
    "server/run",
    "server/store",
    "ledger",
    "observability",
    "serverErrors.ts",
    "wire"
  ],
  "server/http": ["server/run", "observability", "wire"],
  "server/transport": [
    "server/caller",
    "server/http",
    "server/handler",
    "server/run",
    "ledger",
    "serverErrors.ts",
    "peer.ts",
    "listen.ts",
    "wire"
  ],
  "server/idempotency": [
    "server/caller",
    "server/durable",
    "server/transport",
    "server/handler",
    "server/run",
    "server/store",
    "ledger",
    "observability",
    "wire"
  ],
  "server/push": ["server/caller", "server/handler", "server/run", "server/store", "ledger", "observability", "wire"],
  "server/replication": [
    "server/caller",
    "server/durable",
    "server/transport",
    "server/idempotency",
    "server/handler",
    "server/run",
    "server/store",
    "observability",
    "wire"
  ],
  "server/edge": [
    "server/durable",
    "server/caller",
    "server/http",
    "server/transport",
    "server/idempotency",
    "server/push",
    "server/replication",
    "server/handler",
    "server/run",
    "server/store",
    "observability",
    "serverErrors.ts",
    "listen.ts",
    "wire"
  ],
  cli: ["public", "client/call", "client/card", "peer.ts", "wire"]
}
// The public modules are faces over the internal rooms: any of them.
const publicRooms = Object.keys(rooms).filter((room) => room !== "cli")

// The public modules whose values internal code may use: data and errors, below the services.
const dataModules = [
  "Part",
  "RemoteOutcome",
  "RemoteEvent",
  "A2AClientError",
  "AgentCardResolutionError",
  "FailureHint"
]
  .map((name) => `${name}.ts`)

/** A file's room, from its path relative to src. */
const roomOf = (file: string): string => {
  if (dataModules.includes(file)) return "wire"
  if (file === "Cli.ts" || file === "bin.ts" || /^(cli|demo)\//.test(file)) return "cli"
  if (!file.startsWith("internal/")) return "public"
  const folder = path.posix.dirname(file.slice("internal/".length))
  return folder === "." ? path.posix.basename(file) : folder
}

const inside = (file: string) => file.startsWith("internal/") ? file.slice("internal/".length) : file

interface Import {
  readonly from: string
  readonly to: string
  readonly text: string
  readonly line: number
  readonly typeOnly: boolean
  readonly dynamic: boolean
}

const sources = fs.readdirSync(src, { recursive: true, encoding: "utf8" })
  .map((file) => file.split(path.sep).join("/"))
  .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
  .sort()

// A statement that imports or re-exports a relative module, at the start of a line (so not in a comment), read as
// `import-graph.mjs` reads them: its clause has no quote, `;`, `=` or parenthesis, so it cannot run past its
// statement.
const staticImport = /^[ \t]*(import|export)\s+(type\s+)?([^'";=()]*?\bfrom\s*)?["'](\.[^"']+)["']/gm
// `import("./x.js")`, in code (`typeof import(…)` is a type).
const dynamicImport = /\bimport\(\s*["'](\.[^"']+)["']\s*\)/g

// Every relative import of a file: static, `export … from`, and `import()`. On this src the two patterns find the
// imports a TypeScript parse of each file finds, type-only or not (559 when they were written), in a tenth of the
// time: loading the compiler alone would take most of a second.
const importsOf = (file: string): Array<Import> => {
  const text = fs.readFileSync(path.join(src, file), "utf8")
  const lineOf = (index: number) => text.slice(0, index).split("\n").length
  const to = (specifier: string) =>
    path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier.replace(/\.js$/, ".ts")))
  const statics = [...text.matchAll(staticImport)]
    .filter(([, keyword, , clause]) => keyword === "import" || clause !== undefined)
    .map((match): Import => {
      const [statement, , type, clause] = match
      const named = clause?.match(/^\{([^}]*)\}\s*from\s*$/)?.[1]!.split(",").map((name) => name.trim())
        .filter((name) => name !== "")
      return {
        from: file,
        to: to(match[4]!),
        text: statement.trim().replace(/\s+/g, " "),
        line: lineOf(match.index + statement.length - statement.trimStart().length),
        typeOnly: type !== undefined ||
          (named !== undefined && named.length > 0 && named.every((name) => /^type\s/.test(name))),
        dynamic: false
      }
    })
  const dynamics = [...text.matchAll(dynamicImport)]
    .map((match) => ({ match, before: text.slice(text.lastIndexOf("\n", match.index) + 1, match.index) }))
    .filter(({ before }) => !/^\s*(\*|\/\/)/.test(before))
    .map(({ before, match }): Import => ({
      from: file,
      to: to(match[1]!),
      text: match[0],
      line: lineOf(match.index),
      typeOnly: /\btypeof\s*$/.test(before),
      dynamic: true
    }))
  return [...statics, ...dynamics]
}

const imports = sources.flatMap(importsOf)
const where = (i: Import) => `src/${i.from}:${i.line} \`${i.text}\``

/** A path of rooms from `from` to `to` along `graph`'s edges, or none. */
const pathBetween = (
  graph: Record<string, ReadonlyArray<string>>,
  from: string,
  to: string
): Array<string> | undefined => {
  const seen = new Set<string>()
  const walk = (room: string): Array<string> | undefined => {
    if (room === to) return [room]
    if (seen.has(room)) return undefined
    seen.add(room)
    for (const next of graph[room] ?? []) {
      const rest = walk(next)
      if (rest !== undefined) return [room, ...rest]
    }
    return undefined
  }
  return walk(from)
}

const withPublic: Record<string, ReadonlyArray<string>> = { ...rooms, public: publicRooms }

/** What is wrong with one import between rooms, or nothing. */
const problemOf = (i: Import): string | undefined => {
  const from = roomOf(i.from)
  const to = roomOf(i.to)
  if (from === to) return undefined
  if (to === "public" && from !== "cli") {
    return i.typeOnly
      ? undefined
      : `${where(i)} imports the values of the public service module ${i.to}: internal code imports it only as a ` +
        `type (\`import type\`); only the data and error modules (${dataModules.join(", ")}) are imported as values`
  }
  const allowed = withPublic[from]
  // A room the rule does not name is reported once, below.
  if (allowed === undefined || allowed.includes(to)) return undefined
  const cycle = pathBetween(withPublic, to, from)
  return `${where(i)} goes from the room ${from} to ${to}, which the rule does not allow (${from} may import ` +
    `${allowed.length === 0 ? "no room" : allowed.join(", ")}). Import it from a room ${from} may import, or ` +
    (cycle === undefined
      ? `if ${from} is meant to use ${to}, add "${to}" to rooms["${from}"] in test/rooms.test.ts.`
      : `move the file: adding "${to}" to rooms["${from}"] would close the cycle ${[from, ...cycle].join(" -> ")}.`)
}

describe("rooms", () => {
  it("the rule names known rooms and has no cycle", () => {
    const unknown = Object.entries(rooms).flatMap(([room, allowed]) =>
      allowed.filter((other) => withPublic[other] === undefined).map((other) => `${room} -> ${other}: no such room`)
    )
    // Each cycle once, from its first room in the rule's order.
    const order = Object.keys(withPublic)
    const cycles = new Set(
      Object.entries(rooms).flatMap(([room, allowed]) =>
        allowed.flatMap((other) => {
          const back = pathBetween(withPublic, other, room)
          if (back === undefined) return []
          const cycle = [room, ...back.slice(0, -1)]
          const first = cycle.reduce((a, b) => order.indexOf(a) <= order.indexOf(b) ? a : b)
          const at = cycle.indexOf(first)
          const from = [...cycle.slice(at), ...cycle.slice(0, at), first].join(" -> ")
          return [`the rule has the cycle ${from}: take one of these imports out of the rule`]
        })
      )
    )
    expect([...unknown, ...cycles]).toEqual([])
  })

  it("every room of src/internal is in the rule", () => {
    const missing = [...new Set(sources.filter((file) => file.startsWith("internal/")).map(roomOf))]
      .filter((room) => rooms[room] === undefined)
      .map((room) =>
        `src/internal has the room ${room}, which the rule does not name: add "${room}": [the rooms it may import] ` +
        `to \`rooms\` in test/rooms.test.ts`
      )
    expect(missing).toEqual([])
  })

  it("every import between rooms is one the rule allows", () => {
    expect(sources.length).toBeGreaterThan(100)
    expect(imports.length).toBeGreaterThan(500)
    const problems = imports.map(problemOf).filter((problem) => problem !== undefined)
    expect(problems).toEqual([])
  })

  it("no two files import each other's values in a circle", () => {
    const graph = new Map<string, Array<string>>()
    for (const i of imports) {
      if (!i.typeOnly && !i.dynamic) graph.set(i.from, [...(graph.get(i.from) ?? []), i.to])
    }
    const cycles: Array<string> = []
    const state = new Map<string, "open" | "done">()
    const stack: Array<string> = []
    const visit = (file: string): void => {
      state.set(file, "open")
      stack.push(file)
      for (const next of graph.get(file) ?? []) {
        if (state.get(next) === "open") {
          const cycle = [...stack.slice(stack.indexOf(next)), next].map((file) => `src/${file}`).join(" -> ")
          cycles.push(`${cycle}: these files import each other's values in a circle`)
        } else if (state.get(next) === undefined) visit(next)
      }
      stack.pop()
      state.set(file, "done")
    }
    for (const file of sources) if (state.get(file) === undefined) visit(file)
    expect(cycles).toEqual([])
  })
})

// --- The map: docs/internals.md and the README ---

const internalsPage = "docs/internals.md"
const internals = fs.readFileSync(path.join(root, internalsPage), "utf8")

/** The text of a Markdown section, from its heading to the next heading of its level or above. */
const section = (text: string, heading: string): string | undefined => {
  const lines = text.split("\n")
  const start = lines.indexOf(heading)
  if (start === -1) return undefined
  const level = heading.indexOf(" ")
  const end = lines.findIndex((line, i) => i > start && /^#+ /.test(line) && line.indexOf(" ") <= level)
  return lines.slice(start + 1, end === -1 ? undefined : end).join("\n")
}

const backticked = (text: string) => [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!)

// The rows of the rooms table: a room's folder (`internal/client/call/`, or `internal/` for the files directly in
// it) and the files its row names.
const rows = (section(internals, "## Rooms") ?? "").split("\n")
  .map((line) => line.match(/^\| `internal\/([^`]*)` \|(.*)\|\s*$/))
  .filter((match) => match !== null)
  .map((match) => ({
    folder: match[1]!,
    files: backticked(match[2]!).filter((name) => /^[\w.-]+\.ts$/.test(name))
  }))

const internalFiles = sources.filter((file) => file.startsWith("internal/")).map(inside)
const rowName = (folder: string) => `\`internal/${folder}\``

describe("the map of the rooms", () => {
  it(`${internalsPage} names every file under src/internal in its room's row, and no other file`, () => {
    expect(rows.length).toBeGreaterThan(15)
    const named = new Set(rows.flatMap(({ files, folder }) => files.map((name) => folder + name)))
    const missing = internalFiles.filter((file) => !named.has(file))
    const stale = [...named].filter((file) => !internalFiles.includes(file))
    const folderOf = (file: string) => file.slice(0, file.lastIndexOf("/") + 1)
    const nameOf = (file: string) => file.slice(file.lastIndexOf("/") + 1)
    const problems = [
      ...missing.map((file) => {
        const folder = folderOf(file)
        const moved = stale.find((old) => nameOf(old) === nameOf(file))
        const into = rows.some((row) => row.folder === folder)
          ? `in the row ${rowName(folder)} of its table, add \`${nameOf(file)}\` with a few words on what it holds`
          : `add a row to its table: | ${rowName(folder)} | what the room holds: \`${nameOf(file)}\` (what it ` +
            `holds) |, and "${roomOf(`internal/${file}`)}" to \`rooms\` in test/rooms.test.ts`
        return `${internalsPage} does not name src/internal/${file}: ${into}` +
          (moved === undefined ? "" : ` (moved from ${rowName(folderOf(moved))}: take its words from there)`)
      }),
      ...stale.map((file) =>
        `${internalsPage} names \`${nameOf(file)}\` in the row ${rowName(folderOf(file))}, but ` +
        `src/internal/${file} does not exist: remove it there`
      )
    ]
    expect(problems).toEqual([])
  })

  it(`${internalsPage} has one row per room, and every room of the rule is a folder or a file of src/internal`, () => {
    const folders = [...new Set(internalFiles.map((file) => file.slice(0, file.lastIndexOf("/") + 1)))]
    const rowFolders = rows.map((row) => row.folder)
    expect(rowFolders.filter((folder, i) => rowFolders.indexOf(folder) !== i)).toEqual([])
    expect(rowFolders.filter((folder) => !folders.includes(folder)).map((folder) => `no such folder: ${folder}`))
      .toEqual([])
    const internalRooms = Object.keys(rooms).filter((room) => room !== "cli" && room !== "public")
    expect(
      internalRooms.filter((room) => !internalFiles.some((file) => roomOf(`internal/${file}`) === room))
        .map((room) => `the rule names ${room}, which holds no file: remove it from \`rooms\` in test/rooms.test.ts`)
    ).toEqual([])
  })

  it(`${internalsPage} describes both request paths, naming files that exist`, () => {
    const paths = [["## A call on the client", "client/"], ["## A request on the server", "server/"]] as const
    for (const [heading, side] of paths) {
      const text = section(internals, heading)
      expect(text, `${internalsPage} has no heading "${heading}"`).toBeDefined()
      const files = backticked(text!).filter((name) => name.endsWith(".ts"))
      expect(files.filter((file) => file.startsWith(side)).length, `${heading}: files of ${side}`)
        .toBeGreaterThanOrEqual(4)
      expect(files.filter((file) => !internalFiles.includes(file)).map((file) => `${heading}: no such file ${file}`))
        .toEqual([])
    }
  })

  it("the README's \"How it is built\" names every room and links both request paths", () => {
    const readme = section(fs.readFileSync(path.join(root, "README.md"), "utf8"), "## How it is built")
    expect(readme, "README.md has no section \"## How it is built\"").toBeDefined()
    const named = backticked(readme!)
    const internalRooms = Object.keys(rooms).filter((room) => room !== "cli" && room !== "public")
    expect(
      internalRooms.filter((room) => !named.includes(room.endsWith(".ts") ? room : `${room}/`))
        .map((room) => `README.md's "How it is built" does not name the room \`${room}\``)
    ).toEqual([])
    for (const anchor of ["#rooms", "#a-call-on-the-client", "#a-request-on-the-server"]) {
      expect(readme).toContain(`](${internalsPage}${anchor})`)
    }
  })
})
