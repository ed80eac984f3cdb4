/**
 * `effect-a2a find-error`: finds the log entries of an error id in JSON log
 * files (one `Logger.json` object per line), plain or gzipped, or standard
 * input, reading line by line.
 *
 * @internal
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as stream from "node:stream"
import * as zlib from "node:zlib"
import type * as Cli from "../Cli.js"
import * as ErrorId from "../internal/wire/errorId.js"

/**
 * A log source could not be read.
 *
 * @internal
 */
export class LogSourceError extends Schema.TaggedError<LogSourceError>("effect-a2a/LogSourceError")("LogSourceError", {
  reason: Schema.Literal("Open", "Read"),
  source: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `cannot read ${this.source}: ${this.detail}`
  }
}

/**
 * Longer lines are skipped without being held in memory whole.
 *
 * @internal
 */
export const maxLineLength = 4 * 1024 * 1024

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** Any string within `value` (depth-bounded) for which `test` holds. */
const someString = (value: unknown, test: (s: string) => boolean, depth = 0): boolean => {
  if (typeof value === "string") return test(value)
  if (depth > 8 || typeof value !== "object" || value === null) return false
  return Object.values(value).some((inner) => someString(inner, test, depth + 1))
}

/**
 * The log entry on `line` when it belongs to `errorId`: its
 * `annotations.errorId` is the id, or one of its strings holds
 * `error_id: <id>` or `error_id=<id>`. Lines that are not JSON objects are
 * skipped.
 *
 * @internal
 */
export const matchLine = (line: string, errorId: string): Option.Option<Readonly<Record<string, unknown>>> => {
  // Most lines do not hold the id at all: spare them the parse.
  if (errorId === "" || !line.includes(JSON.stringify(errorId).slice(1, -1))) return Option.none()
  let parsed: unknown
  try {
    parsed = JSON.parse(line)
  } catch {
    return Option.none()
  }
  if (!isRecord(parsed)) return Option.none()
  const annotations = parsed["annotations"]
  if (isRecord(annotations) && annotations["errorId"] === errorId) return Option.some(parsed)
  return someString(parsed, (s) => ErrorId.holds(s, errorId)) ? Option.some(parsed) : Option.none()
}

const show = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value) ?? String(value))

const indent = (text: string, by: string) => text.split("\n").map((line) => `${by}${line}`).join("\n")

const leading = ["errorId", "taskId", "contextId"]

/**
 * A match as readable text: where it was found, timestamp, level and
 * message, the ids and other annotations, then the cause.
 *
 * @internal
 */
export const formatMatch = (match: Cli.LogMatch): string => {
  const { entry } = match
  const annotations = isRecord(entry["annotations"]) ? entry["annotations"] : {}
  const keys = [
    ...leading.filter((key) => key in annotations),
    ...Object.keys(annotations).filter((key) => !leading.includes(key) && key !== "cause")
  ]
  const causes = [annotations["cause"], entry["cause"]].filter((cause) =>
    cause !== undefined && cause !== null && cause !== ""
  )
  const head = [entry["timestamp"], entry["logLevel"], entry["message"]].filter((part) => part !== undefined).map(show)
  return [
    `--- ${match.source}:${match.line}`,
    head.join(" "),
    ...keys.map((key) => `  ${key}: ${show(annotations[key])}`),
    ...(causes.length === 0
      ? ["  cause: (none logged)"]
      : ["  cause:", ...causes.map((cause) => indent(show(cause), "    "))])
  ].join("\n")
}

/**
 * Splits text chunks into lines, emptying any line longer than `max` while
 * it streams in (kept as an empty line, so that the lines after it keep
 * their numbers).
 *
 * @internal
 */
export const boundedLines = (max: number) => <E, R>(self: Stream.Stream<string, E, R>): Stream.Stream<string, E, R> => {
  const end = Symbol("end")
  return self.pipe(
    Stream.concat(Stream.make<[typeof end]>(end)),
    Stream.mapAccum({ pending: "", skipping: false }, (state, chunk: string | typeof end) => {
      if (chunk === end) {
        return [
          { pending: "", skipping: false },
          state.skipping || state.pending === "" ? [] : [state.pending]
        ] as const
      }
      const pieces = chunk.split("\n")
      const lines: Array<string> = []
      let { pending, skipping } = state
      // The text after the last line break: split gives at least one piece.
      const last = pieces.pop() ?? ""
      for (const piece of pieces) {
        lines.push(!skipping && pending.length + piece.length <= max ? pending + piece : "")
        pending = ""
        skipping = false
      }
      if (!skipping) {
        if (pending.length + last.length > max) {
          pending = ""
          skipping = true
        } else pending += last
      }
      return [{ pending, skipping }, lines] as const
    }),
    Stream.flattenIterables,
    Stream.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line))
  )
}

/**
 * A source of log lines.
 *
 * @internal
 */
export interface Source {
  readonly name: string
  readonly bytes: Stream.Stream<Uint8Array, LogSourceError>
}

const gzipMagic = (path: string): Effect.Effect<boolean, LogSourceError> =>
  Effect.tryPromise({
    try: async () => {
      const handle = await fs.promises.open(path, "r")
      try {
        const { buffer, bytesRead } = await handle.read(Buffer.alloc(2), 0, 2, 0)
        return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b
      } finally {
        await handle.close()
      }
    },
    catch: (error) =>
      new LogSourceError({
        reason: "Open",
        source: path,
        detail: error instanceof Error ? error.message : String(error)
      })
  })

const readError = (source: string) => (error: unknown) =>
  new LogSourceError({ reason: "Read", source, detail: error instanceof Error ? error.message : String(error) })

/**
 * A file, gunzipped on the fly when it starts with the gzip magic bytes.
 *
 * @internal
 */
export const fileSource = (path: string): Source => ({
  name: path,
  bytes: Stream.unwrap(Effect.map(gzipMagic(path), (gzipped) =>
    NodeStream.fromReadable(() => {
      const file = fs.createReadStream(path)
      if (!gzipped) return file
      const gunzip = zlib.createGunzip()
      // `pipeline` destroys the gunzip with the file's error, so it surfaces.
      stream.pipeline(file, gunzip, () => undefined)
      return gunzip
    }, readError(path))))
})

/**
 * Standard input (plain text; pipe a `.gz` through `zcat`).
 *
 * @internal
 */
const stdinSource: Source = {
  name: "stdin",
  bytes: NodeStream.fromReadable(() => process.stdin, readError("stdin"), { closeOnDone: false })
}

/**
 * The matches of `errorId` in one source, in order.
 *
 * @internal
 */
export const search = (errorId: string, source: Source): Stream.Stream<Cli.LogMatch, LogSourceError> =>
  source.bytes.pipe(
    Stream.decodeText(),
    boundedLines(maxLineLength),
    Stream.zipWithIndex,
    Stream.filterMap(([line, index]) =>
      Option.map(matchLine(line, errorId), (entry): Cli.LogMatch => ({ source: source.name, line: index + 1, entry }))
    )
  )

/**
 * Prints every match of `errorId` in `sources` through `print` and reports
 * unreadable sources through `warn`; the number of matches and the sources
 * that could not be read (to the end).
 *
 * @internal
 */
const printMatches = <R1, R2>(
  errorId: string,
  sources: ReadonlyArray<Source>,
  print: (text: string) => Effect.Effect<void, never, R1>,
  warn: (text: string) => Effect.Effect<void, never, R2>
): Effect.Effect<Cli.FindErrorResult, never, R1 | R2> =>
  Effect.suspend(() => {
    const unreadable: Array<string> = []
    return Stream.fromIterable(sources).pipe(
      Stream.flatMap((source) =>
        search(errorId, source).pipe(
          Stream.catchAll((error) =>
            Stream.execute(Effect.zipRight(warn(error.message), Effect.sync(() => unreadable.push(source.name))))
          )
        )
      ),
      Stream.tap((match) => print(formatMatch(match))),
      Stream.runCount,
      Effect.map((matches) => ({ matches, unreadable }))
    )
  })

/**
 * `find-error` itself: {@link printMatches} over `files`, or standard input
 * when there is none, on stdout and stderr.
 *
 * @internal
 */
export const findError = (errorId: string, files: ReadonlyArray<string>): Effect.Effect<Cli.FindErrorResult> =>
  printMatches(
    errorId,
    files.length === 0 ? [stdinSource] : files.map(fileSource),
    (text) => Console.log(`${text}\n`),
    (text) => Console.error(`effect-a2a find-error: ${text}`)
  )

/**
 * The exit code of a search: 3 when a source could not be read (the search
 * is incomplete, whatever it found), else 1 when nothing was found, else 0.
 *
 * @internal
 */
export const exitCode = (result: Cli.FindErrorResult): number =>
  result.unreadable.length > 0 ? 3 : result.matches === 0 ? 1 : 0
