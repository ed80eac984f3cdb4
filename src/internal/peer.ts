/**
 * The optional peer dependencies: packages only some users need (a SQL
 * driver and its native addon, gRPC, the command line). Each is loaded by
 * `import()` when the layer that needs it is built, never by a module that
 * a client or an in-memory server loads, so that the others need not
 * install them. A missing one fails that layer naming what to install,
 * each layer with its own error and the reason `MissingPackage`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"

/** Why `load` failed: what to install, then what the import said. */
export interface Missing {
  readonly message: string
  readonly cause: unknown
}

const listed = (names: ReadonlyArray<string>): string =>
  names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`

const describe = (cause: unknown): string => cause instanceof Error ? cause.message : String(cause)

/**
 * The ranges package.json asks for, by package: a plain `npm install` of
 * some (better-sqlite3) would take a major that does not fit. From both
 * `src/internal` and `dist/internal`; read only when a hint is given.
 */
const ranges = (): Record<string, string> => {
  try {
    const manifest = JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
    return { ...manifest.peerDependencies }
  } catch {
    return {}
  }
}

/** What to install to use `use`: `install a and b to use X (npm install a@^1.2.0 b@^3.0.0)`. */
export const installHint = (packages: ReadonlyArray<string>, use: string): string => {
  const range = ranges()
  const specs = packages.map((name) => range[name] === undefined ? name : `${name}@${range[name]}`)
  return `install ${listed(packages)} to use ${use} (npm install ${specs.join(" ")})`
}

/**
 * The modules `modules` imports, or a failure naming `packages` (the
 * optional peers `use` needs) and what the import said.
 */
export const load = <A>(
  packages: ReadonlyArray<string>,
  use: string,
  modules: () => Promise<A>
): Effect.Effect<A, Missing> =>
  Effect.tryPromise({
    try: modules,
    // A package that is installed but cannot load says what to do itself: installing it again would not help.
    catch: (cause) =>
      cause instanceof NotLoadable
        ? { message: `${cause.message} (to use ${use})`, cause }
        : { message: `${installHint(packages, use)}: ${describe(cause)}`, cause }
  })

/** An optional peer that is installed but cannot load; its message says what to do. */
class NotLoadable extends Error {}

/** gRPC's packages, for a client and for a server. */
export const grpcPackages: ReadonlyArray<string> = ["@grpc/grpc-js", "@bufbuild/protobuf"]

/**
 * A package by a non-literal specifier: the SQL drivers ship no types of
 * their own.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- what it loads has no types to name
export const untyped = (name: string): Promise<any> => import(name)

/**
 * better-sqlite3 with its native addon loaded. The package installs without
 * the addon when its build was skipped or failed, and would say so only once
 * a database is opened, as a failure to open that file.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- better-sqlite3 ships no types of its own
export const betterSqlite3 = async (): Promise<any> => {
  const module = await untyped("better-sqlite3")
  try {
    new module.default(":memory:").close()
  } catch (cause) {
    throw new NotLoadable(
      `better-sqlite3 is installed without its native addon; rebuild it (npm rebuild better-sqlite3): ${
        describe(cause)
      }`,
      { cause }
    )
  }
  return module
}
