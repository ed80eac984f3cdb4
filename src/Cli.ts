/**
 * The `effect-a2a` command line, built with `@effect/cli`, an optional peer
 * that this module and the `effect-a2a` bin alone need:
 *
 * - `probe <agent-url> [--text T] [--timeout D] [--transport T] [--header 'Name: value']… [--api-key KEY] [--push] [--trust JWK-FILE|JWKS-URL] [--json]`:
 *   one blocking call; says which channel it ended in (exit 0 Completed,
 *   3 card resolution, 4 client error, a refusal for credentials included,
 *   5 Failed, 6 any other outcome, 2 usage: among them an agent URL that
 *   does not parse or is not http or https, and a `--header` that is not
 *   `Name: value`). Header values are never printed.
 * - `find-error <error-id> [files…]`: the entries of an error id in JSON log
 *   files (plain or gzipped) or standard input, with their cause (exit 0
 *   found, 1 none found, 3 a file cannot be read, 2 usage: a malformed id).
 * - `playground [--host H] [--port P] [--log-file F] [--sign-key FILE]`: a
 *   remote agent that ends the way the message text asks; its card signed
 *   with the private key in FILE (PEM or JWK) when given.
 * - `keygen [--out DIR]`: an ES256 key pair to try signing with, as
 *   `card-signing.private.jwk` and `card-signing.public.jwk` (never
 *   replacing a file), their paths and `kid` printed, never the private key.
 * - `demo`: the worked example, a travel orchestrator and a remote booking
 *   service on 127.0.0.1, through every failure channel ({@link runDemo};
 *   {@link runDemoWith} runs it against another model).
 *
 * The pieces behind the commands are plain functions and Effects, usable
 * (and tested) without a process.
 *
 * @since 0.1.0
 */
import type * as CliApp from "@effect/cli/CliApp"
import type * as Command from "@effect/cli/Command"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as A2AServer from "./A2AServer.js"
import type * as Authentication from "./Authentication.js"
import * as commands from "./cli/commands.js"
import * as findErrorInternal from "./cli/findError.js"
import * as playgroundInternal from "./cli/playground.js"
import * as probeInternal from "./cli/probe.js"
import * as travelDemo from "./demo/travel.js"
import type * as RemoteAgent from "./RemoteAgent.js"

/**
 * Ends a command with a process exit code other than 0. `run` turns it into
 * its result; a command added with {@link make} may fail with it too.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Effect } from "effect"
 *
 * const notFound = Effect.fail(new Cli.ExitCode({ code: 1 }))
 * ```
 * @category errors
 * @since 0.1.0
 */
export const ExitCode: typeof commands.ExitCode = commands.ExitCode

/**
 * @category errors
 * @since 0.1.0
 */
export type ExitCode = commands.ExitCode

/**
 * The exit code of a usage error (unknown command, bad option or argument).
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Effect } from "effect"
 *
 * const code = Cli.run(["node", "effect-a2a", "probe"]) // the agent URL is missing
 * const misused = Effect.map(code, (c) => c === Cli.usageExitCode) // true
 * ```
 * @category constants
 * @since 0.1.0
 */
export const usageExitCode: typeof commands.usageExitCode = commands.usageExitCode

// ---------------------------------------------------------------------------
// probe
// ---------------------------------------------------------------------------

/**
 * The JSON object `probe --json` prints: `channel` and, as strings or
 * `null`, `transport`, `outcome`, `reason`, `delivery`, `taskId`,
 * `contextId`, `errorId`, `text` (the final status text of an outcome, or
 * the error's explanation); `status`, a number or `null`, is the status the
 * server answered an error with: HTTP's, or on gRPC its code as HTTP
 * numbers it (a refusal for credentials is 401, `UNAUTHENTICATED`, on every
 * transport).
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Schema } from "effect"
 *
 * declare const stdout: string // what `effect-a2a probe --json` printed
 * const report = Schema.decodeUnknownSync(Cli.ProbeReport)(JSON.parse(stdout))
 * ```
 * @category probe
 * @since 0.1.0
 */
export const ProbeReport = probeInternal.ProbeReport

/**
 * @category probe
 * @since 0.1.0
 */
export type ProbeReport = probeInternal.ProbeReport

/**
 * Resolves the card at `url`, sends `text` in one blocking call and reports
 * the channel the call ended in. Never fails.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Duration, Effect } from "effect"
 *
 * const report = Cli.probe({ url: "http://127.0.0.1:8000", text: "ping", timeout: Duration.seconds(5) })
 * Effect.runPromise(report).then((r) => console.log(r.channel, r.outcome, Cli.probeExitCode(r)))
 * ```
 * @category probe
 * @since 0.1.0
 */
export const probe: (options: ProbeOptions) => Effect.Effect<ProbeReport> = probeInternal.probe

/**
 * What {@link probe} needs: the agent's base URL (or its card URL), the message text and how long the call may take.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Duration } from "effect"
 *
 * const options: Cli.ProbeOptions = {
 *   url: "http://127.0.0.1:8000/.well-known/agent-card.json", // a card URL works too
 *   text: "complete ok",
 *   timeout: Duration.seconds(5)
 * }
 * const report = Cli.probe(options)
 * ```
 * @category probe
 * @since 0.1.0
 */
export interface ProbeOptions {
  readonly url: string
  readonly text: string
  readonly timeout: Duration.Duration
  /** The one transport to call over; without it, the client's choice from the card. */
  readonly transport?: RemoteAgent.Transport | undefined
  /**
   * Sent with every request, the card's included, on every transport (as
   * metadata on gRPC): credentials such as `{ "X-API-Key": Redacted.make(key) }`.
   * A `Redacted` value never reaches the report or a log line.
   */
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted>> | undefined
  /**
   * Opens a push receiver on 127.0.0.1 (any free port) for the probe, sends
   * with push (answered at once, then the outcome awaited by push, polled
   * when no webhook came in time), and reports in `push` whether the outcome
   * was pushed.
   */
  readonly push?: boolean | undefined
  /**
   * Verify the card's signature with these keys (see `RemoteAgent.Trust`);
   * the report's `signed` says whether the card carries one.
   */
  readonly trust?: RemoteAgent.Trust | undefined
}

/**
 * The report of an outcome (exhaustive over `RemoteOutcome`), over the
 * transport given, when known.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Effect } from "effect"
 * import { RemoteAgent } from "effect-a2a"
 *
 * declare const agent: RemoteAgent.RemoteAgent
 * // a probe through an agent that is already resolved
 * const report = agent.send("ping").pipe(Effect.match({ onFailure: Cli.errorReport, onSuccess: Cli.outcomeReport }))
 * ```
 * @category probe
 * @since 0.1.0
 */
export const outcomeReport = probeInternal.outcomeReport

/**
 * The report of a card resolution failure or a client error.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { A2AClientError } from "effect-a2a"
 *
 * const report = Cli.errorReport(new A2AClientError.A2AClientError({
 *   agent: "booking", operation: "SendMessage", reason: "ConnectionRefused", delivery: "NotSent", detail: "ECONNREFUSED"
 * }))
 * report.channel // "ClientError"
 * Cli.probeExitCode(report) // 4
 * ```
 * @category probe
 * @since 0.1.0
 */
export const errorReport = probeInternal.errorReport

/**
 * 0 Completed, 3 card resolution, 4 client error, 5 Failed, 6 any other
 * outcome.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * Cli.probeExitCode({ channel: "ClientError", transport: "GRPC", outcome: null, reason: "Timeout", delivery: "Unknown", status: null,
 *   taskId: null, contextId: null, errorId: null, text: null }) // 4
 * ```
 * @category probe
 * @since 0.1.0
 */
export const probeExitCode: (report: ProbeReport) => number = probeInternal.exitCode

/**
 * The readable report printed without `--json`.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Console, Duration, Effect } from "effect"
 *
 * const program = Cli.probe({ url: "http://127.0.0.1:8000", text: "reject no seats", timeout: Duration.seconds(5) })
 *   .pipe(Effect.flatMap((report) => Console.log(Cli.formatProbeReport(report))))
 * // channel:    Outcome
 * // outcome:    Rejected
 * // ...
 * ```
 * @category probe
 * @since 0.1.0
 */
export const formatProbeReport: (report: ProbeReport) => string = probeInternal.formatReport

// ---------------------------------------------------------------------------
// find-error
// ---------------------------------------------------------------------------

/**
 * A log entry that belongs to an error id, and where it was found.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Option } from "effect"
 *
 * const matchesIn = (source: string, lines: ReadonlyArray<string>, errorId: string): Array<Cli.LogMatch> =>
 *   lines.flatMap((text, i) =>
 *     Option.match(Cli.matchLogLine(text, errorId), {
 *       onNone: () => [],
 *       onSome: (entry) => [{ source, line: i + 1, entry }]
 *     })
 *   )
 * ```
 * @category find-error
 * @since 0.1.0
 */
export interface LogMatch {
  readonly source: string
  readonly line: number
  readonly entry: Readonly<Record<string, unknown>>
}

/**
 * The log entry on one line (a `Logger.json` object) when it belongs to the
 * error id: `annotations.errorId` is the id, or one of its strings holds
 * `error_id: <id>` (a failure's text) or `error_id=<id>` (a log message's
 * `[error_id=<id>]`). Lines that are not JSON are skipped.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 *
 * Cli.matchLogLine('{"message":"Runner failed to execute [error_id=3f9c0a7b12de]","annotations":{"errorId":"3f9c0a7b12de"}}', "3f9c0a7b12de")
 * // Option.some({ message: "Runner failed to execute [error_id=3f9c0a7b12de]", ... })
 * ```
 * @category find-error
 * @since 0.1.0
 */
export const matchLogLine: (line: string, errorId: string) => Option.Option<Readonly<Record<string, unknown>>> =
  findErrorInternal.matchLine

/**
 * A match as readable text: timestamp, level, message, the ids, then the
 * cause.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 *
 * Cli.formatLogMatch({
 *   source: "booking.log",
 *   line: 42,
 *   entry: {
 *     logLevel: "ERROR",
 *     message: "Runner failed to execute [error_id=3f9c0a7b12de]",
 *     annotations: { errorId: "3f9c0a7b12de", cause: "Error: card declined" }
 *   }
 * })
 * // "--- booking.log:42\nERROR Runner failed to execute [error_id=3f9c0a7b12de]\n  errorId: 3f9c0a7b12de\n  cause:\n    Error: card declined"
 * ```
 * @category find-error
 * @since 0.1.0
 */
export const formatLogMatch: (match: LogMatch) => string = findErrorInternal.formatMatch

/**
 * Searches files (gunzipped when they are gzip) or, with no file, standard
 * input, line by line; prints each match on stdout and each unreadable file
 * on stderr. Succeeds with the number of matches and the files that could
 * not be read.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Effect } from "effect"
 *
 * Effect.runPromise(Cli.findError("3f9c0a7b12de", ["./booking.log.jsonl.gz"]))
 *   .then((result) => console.log(result.matches, "found", Cli.findErrorExitCode(result)))
 * ```
 * @category find-error
 * @since 0.1.0
 */
export const findError: (errorId: string, files: ReadonlyArray<string>) => Effect.Effect<FindErrorResult> =
  findErrorInternal.findError

/**
 * What {@link findError} found: the number of matches, and the sources
 * (file names, or `stdin`) that could not be read to the end.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 *
 * const summary = (result: Cli.FindErrorResult): string =>
 *   result.unreadable.length > 0 ? `incomplete: cannot read ${result.unreadable.join(", ")}` : `${result.matches} found`
 * ```
 * @category find-error
 * @since 0.1.0
 */
export interface FindErrorResult {
  readonly matches: number
  readonly unreadable: ReadonlyArray<string>
}

/**
 * The exit code of `find-error`: 0 found, 1 no entry found, 3 a file could
 * not be read (the search is incomplete, whatever it found). A malformed
 * error id is a usage error, 2, before any search.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 *
 * Cli.findErrorExitCode({ matches: 2, unreadable: [] }) // 0
 * Cli.findErrorExitCode({ matches: 0, unreadable: [] }) // 1
 * Cli.findErrorExitCode({ matches: 2, unreadable: ["./old.log.gz"] }) // 3
 * ```
 * @category find-error
 * @since 0.1.0
 */
export const findErrorExitCode: (result: FindErrorResult) => number = findErrorInternal.exitCode

// ---------------------------------------------------------------------------
// playground
// ---------------------------------------------------------------------------

/**
 * The playground agent: the first word of the text says how it ends.
 * `complete <text>` COMPLETED with the text as an artifact; `fail <message>`
 * FAILED (the message only in the server's log); `reject <reason>`;
 * `input <question>`; `auth`; `sleep <ms>` (at most 10 minutes) then
 * completes; anything else completes echoing the text. `cancel` is refused
 * by {@link playgroundAdmission}.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 * import * as Cli from "effect-a2a/Cli"
 *
 * const Playground = A2AServer.layer({
 *   agent: Cli.playgroundAgent,
 *   beforeExecute: Cli.playgroundAdmission,
 *   card: { name: "playground", description: "fails on demand" }
 * })
 * ```
 * @category playground
 * @since 0.1.0
 */
export const playgroundAgent = playgroundInternal.agent

/**
 * The playground's admission hook: refuses `cancel`, so it ends CANCELED.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import * as Cli from "effect-a2a/Cli"
 * import { Effect } from "effect"
 *
 * // also cancel requests that name no tenant
 * const beforeExecute = (request: AgentExecutor.AgentRequest) =>
 *   Effect.map(Cli.playgroundAdmission(request), (refused) => refused || request.headers["x-tenant"] === undefined)
 * ```
 * @category playground
 * @since 0.1.0
 */
export const playgroundAdmission = playgroundInternal.admission

/**
 * The failure behind `fail <message>`.
 *
 * @example
 * ```ts
 * import { AgentExecutor } from "effect-a2a"
 * import * as Cli from "effect-a2a/Cli"
 * import { Cause, Option } from "effect"
 *
 * // a failure asked for with `fail <message>` is not worth retrying
 * const afterExecute = AgentExecutor.failureHints((cause) => ({
 *   retryable: !Option.exists(Cause.failureOption(cause), (error) => error instanceof Cli.PlaygroundError)
 * }))
 * ```
 * @category playground
 * @since 0.1.0
 */
export const PlaygroundError = playgroundInternal.PlaygroundError

/**
 * @category playground
 * @since 0.1.0
 */
export type PlaygroundError = playgroundInternal.PlaygroundError

/**
 * Where {@link playgroundLayer} listens, where it appends its logs (`Option.none()` for no file), and the
 * callers' API keys when it authenticates.
 *
 * @example
 * ```ts
 * import * as Cli from "effect-a2a/Cli"
 * import { Option, Redacted } from "effect"
 *
 * const options: Cli.PlaygroundOptions = {
 *   host: "0.0.0.0",
 *   port: 8000,
 *   logFile: Option.some("./playground.jsonl"),
 *   apiKeys: { tester: Redacted.make("k-3c1f") }
 * }
 * const PlaygroundLive = Cli.playgroundLayer(options)
 * ```
 * @category playground
 * @since 0.1.0
 */
export interface PlaygroundOptions {
  readonly host: string
  readonly port: number
  /** gRPC's own port, when its packages are installed. Default 0: any free port. */
  readonly grpcPort?: number | undefined
  /** Appends the server's logs to this file as JSON lines. */
  readonly logFile: Option.Option<string>
  /** `A2AServer`'s `maxInFlight`: requests over it are shed with 429. None by default. */
  readonly maxInFlight?: Option.Option<number> | undefined
  /**
   * Caller id → key: API-key authentication (`X-API-Key`) with
   * `Authentication.apiKey`. None by default: every caller is anonymous.
   */
  readonly apiKeys?: Authentication.ApiKeyOptions["keys"] | undefined
  /**
   * Push targets the SSRF guard lets through (`A2AServer.PushOptions`'s
   * `allowPushTargets`), e.g. `["127.0.0.1"]` for a webhook on this
   * machine. The playground always serves push notifications.
   */
  readonly allowPushTargets?: ReadonlyArray<string> | undefined
  /** Signs the card (`A2AServer.Options`' `signing`). Unsigned by default. */
  readonly signing?: A2AServer.SigningOptions | undefined
  /**
   * A PostgreSQL URL: tasks, the idempotency ledger, the push outbox and the
   * event log (`A2AServer.Options`' `replication`) live there, so that
   * several playgrounds on one database act as one server. None by
   * default: the playground keeps everything in memory.
   */
  readonly replication?: string | undefined
  /**
   * Serves the A2A TCK's system under test instead of the playground agent:
   * it behaves as the message's `messageId` prefix says (`tck-complete-task`,
   * `tck-input-required`, `tck-artifact-*`, `tck-stream-*`, ...). Off by default.
   */
  readonly conformance?: boolean | undefined
  /**
   * With `conformance`, the card declares the TCK's
   * `urn:a2a:tck:required-extension` as required, so every message that
   * does not activate it is refused: for the TCK's CORE-CAP-004 alone.
   */
  readonly requireExtension?: boolean | undefined
}

/**
 * The playground server as a layer: `host`, `port` (0 for any free port)
 * and, optionally, a file its logs are appended to as JSON lines.
 *
 * @example
 * ```ts
 * import { A2AServer } from "effect-a2a"
 * import * as Cli from "effect-a2a/Cli"
 * import { Effect, Option } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const server = yield* A2AServer.A2AServer
 *   console.log(server.url)
 * }).pipe(Effect.provide(Cli.playgroundLayer({ host: "127.0.0.1", port: 0, logFile: Option.none() })))
 * ```
 * @category playground
 * @since 0.1.0
 */
export const playgroundLayer: (
  options: PlaygroundOptions
) => ReturnType<typeof playgroundInternal.layer> = playgroundInternal.layer

// ---------------------------------------------------------------------------
// demo
// ---------------------------------------------------------------------------

/**
 * Runs the worked example with `languageModel` as the travel orchestrator's
 * parent model, and prints what happened in each scenario: a remote booking
 * service on 127.0.0.1 (our server, SQLite ledger, JSON log file) through
 * every way a delegation can end. Any `@effect/ai` provider's
 * `LanguageModel` layer works; {@link runDemo} uses the scripted one.
 *
 * @example
 * ```ts
 * import type { LanguageModel } from "@effect/ai"
 * import { NodeRuntime } from "@effect/platform-node"
 * import * as Cli from "effect-a2a/Cli"
 * import type { Layer } from "effect"
 *
 * declare const Gpt: Layer.Layer<LanguageModel.LanguageModel> // e.g. OpenAiLanguageModel.layer({ model: "gpt-4o-mini" })
 * NodeRuntime.runMain(Cli.runDemoWith(Gpt))
 * ```
 * @category demo
 * @since 0.1.0
 */
export const runDemoWith: typeof travelDemo.runWith = travelDemo.runWith

/**
 * The worked example with the scripted model (no key, nothing beyond
 * 127.0.0.1): what `npm start` and `effect-a2a demo` run.
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import * as Cli from "effect-a2a/Cli"
 * import { Effect, Logger, LogLevel } from "effect"
 *
 * // the report alone: the orchestrator's own logs would interleave with it
 * Cli.runDemo.pipe(Effect.asVoid, Logger.withMinimumLogLevel(LogLevel.None), NodeRuntime.runMain)
 * ```
 * @category demo
 * @since 0.1.0
 */
export const runDemo: typeof travelDemo.run = travelDemo.run

// ---------------------------------------------------------------------------
// the root
// ---------------------------------------------------------------------------

/**
 * The built-in subcommands: `probe`, `find-error`, `playground`, `demo`.
 *
 * @example
 * ```ts
 * import { Command } from "@effect/cli"
 * import * as Cli from "effect-a2a/Cli"
 *
 * // the built-in subcommands under a root command of your own
 * const tool = Command.make("my-tool").pipe(Command.withSubcommands(Cli.subcommands))
 * ```
 * @category commands
 * @since 0.1.0
 */
export const subcommands: typeof commands.subcommands = commands.subcommands

/**
 * The root command with the built-in subcommands and `extra` ones.
 *
 * @example
 * ```ts
 * import { Command } from "@effect/cli"
 * import * as Cli from "effect-a2a/Cli"
 * import { Console } from "effect"
 *
 * const hello = Command.make("hello", {}, () => Console.log("hello"))
 * const withHello = Cli.make([hello])
 * ```
 * @category commands
 * @since 0.1.0
 */
export const make: typeof commands.make = commands.make

/**
 * The `effect-a2a` command with the built-in subcommands.
 *
 * @example
 * ```ts
 * import { Command } from "@effect/cli"
 * import { NodeContext, NodeRuntime } from "@effect/platform-node"
 * import * as Cli from "effect-a2a/Cli"
 * import { Effect } from "effect"
 *
 * // run by @effect/cli itself, without the exit codes of `run`
 * Command.run(Cli.command, { name: "effect-a2a", version: "0.1.0" })(process.argv).pipe(
 *   Effect.provide(NodeContext.layer),
 *   NodeRuntime.runMain
 * )
 * ```
 * @category commands
 * @since 0.1.0
 */
export const command = make()

/**
 * What {@link run} adds to the built-in command line: more subcommands and the version `--version` prints.
 *
 * @example
 * ```ts
 * import { Command } from "@effect/cli"
 * import * as Cli from "effect-a2a/Cli"
 * import { Console } from "effect"
 *
 * const options: Cli.RunOptions<never, never> = {
 *   extra: [Command.make("hello", {}, () => Console.log("hello"))],
 *   version: "1.2.0"
 * }
 * const code = Cli.run(process.argv, options)
 * ```
 * @category commands
 * @since 0.1.0
 */
export interface RunOptions<R, E> {
  /** Subcommands added to the built-in ones. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any name and parsed config: Command is invariant in both, and @effect/cli's withSubcommands itself takes Command<any, any, any, any>
  readonly extra?: ReadonlyArray<Command.Command<any, R, E, any>> | undefined
  /** Default: this package's version. */
  readonly version?: string | undefined
}

/**
 * Runs the command line on `argv` (as `process.argv`: runtime and script
 * first) and succeeds with the process exit code: 0, the code of an
 * {@link ExitCode}, 2 for a usage error (its help is printed on stderr), 1
 * for anything else. Logs go to stderr, so stdout holds only the command's
 * output.
 *
 * @example
 * ```ts
 * import { NodeContext, NodeRuntime } from "@effect/platform-node"
 * import * as Cli from "effect-a2a/Cli"
 * import { Effect } from "effect"
 *
 * Cli.run(process.argv).pipe(
 *   Effect.flatMap((code) => Effect.sync(() => process.exit(code))),
 *   Effect.provide(NodeContext.layer),
 *   NodeRuntime.runMain
 * )
 * ```
 * @category commands
 * @since 0.1.0
 */
export const run: <R = never, E = never>(
  argv: ReadonlyArray<string>,
  options?: RunOptions<R, E>
) => Effect.Effect<number, never, R | CliApp.CliApp.Environment> = commands.run
