/**
 * A logger that appends every log entry to a file as one JSON object per
 * line, in the shape of Effect's `Logger.json` (`message`, `logLevel`,
 * `timestamp`, `cause`, `annotations`, `spans`, `fiberId`), so that
 * `effect-a2a find-error` can search it.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"

/**
 * The log file could not be opened for appending.
 *
 * @internal
 */
export class LogFileError extends Schema.TaggedError<LogFileError>("effect-a2a/LogFileError")("LogFileError", {
  reason: Schema.Literal("Open"),
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `cannot open the log file ${this.path}: ${this.detail}`
  }
}

/**
 * A logger writing JSON lines to an open file descriptor. Each entry is
 * written synchronously, in one `write`, so entries stay whole and in order,
 * and an entry is in the file by the time the logging effect returns (a
 * runbook can search it at once).
 *
 * @internal
 */
export const jsonLineLogger = (fd: number): Logger.Logger<unknown, void> =>
  Logger.map(Logger.jsonLogger, (line) => {
    try {
      fs.writeSync(fd, `${line}\n`)
    } catch {
      // A full disk must not take the server down with it.
    }
  })

/**
 * Adds the JSON file logger for the layer's lifetime (the other loggers
 * stay); the file is opened for appending, created when missing, and closed
 * with the layer. Public as `Observability.layerJsonLogs({ file })`.
 *
 * @internal
 */
export const layer = (path: string): Layer.Layer<never, LogFileError> =>
  Layer.unwrapScoped(
    Effect.map(
      Effect.acquireRelease(
        Effect.try({
          try: () => fs.openSync(path, "a"),
          catch: (error) =>
            new LogFileError({ reason: "Open", path, detail: error instanceof Error ? error.message : String(error) })
        }),
        (fd) => Effect.sync(() => fs.closeSync(fd))
      ),
      (fd) => Logger.add(jsonLineLogger(fd))
    )
  )
