/**
 * The `effect-a2a` commands on `@effect/cli`, and {@link run}, which turns
 * every ending of one into a process exit code.
 *
 * @internal
 */
import * as Args from "@effect/cli/Args"
import type * as CliApp from "@effect/cli/CliApp"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as jose from "jose"
import * as fs from "node:fs"
import * as A2AServer from "../A2AServer.js"
import * as Authentication from "../Authentication.js"
import type * as Cli from "../Cli.js"
import * as travelDemo from "../demo/travel.js"
import * as ErrorId from "../internal/wire/errorId.js"
import * as internalTransport from "../internal/wire/transport.js"
import * as findError from "./findError.js"
import * as keygen from "./keygen.js"
import * as playground from "./playground.js"
import * as probe from "./probe.js"

/**
 * Here, beside the commands that end with it, so that they need nothing of
 * `Cli` but its types; `Cli` re-exports it.
 *
 * @internal
 */
export class ExitCode extends Schema.TaggedError<ExitCode>("effect-a2a/Cli/ExitCode")("ExitCode", {
  code: Schema.Int
}) {}

/** @internal */
export const usageExitCode = 2

/** An error's message, or its cause's when it has none. */
const describe = (error: unknown, depth = 0): string => {
  if (error instanceof Error && error.message !== "") return error.message
  if (depth < 3 && typeof error === "object" && error !== null && "cause" in error) {
    return describe(error.cause, depth + 1)
  }
  return String(error)
}

/**
 * An option given any number of times, none included. `Options.repeated`
 * alone accepts none too, but its usage line shows it as required; the
 * default (never used) is what marks it optional there.
 */
const repeatable = <A>(option: Options.Options<A>): Options.Options<Array<A>> =>
  option.pipe(Options.repeated, Options.withDefault<Array<A>>([]))

/** Ends a command with `code`: 0 is a plain success. */
const exitWith = (code: number): Effect.Effect<void, ExitCode> =>
  code === 0 ? Effect.void : Effect.fail(new ExitCode({ code }))

// ---------------------------------------------------------------------------
// probe
// ---------------------------------------------------------------------------

const timeoutOption = Options.text("timeout").pipe(
  Options.withDescription("How long the call may take: 500ms, 30s, 2m, or milliseconds. Default 30s."),
  Options.mapEffect((input) =>
    Option.match(probe.parseDuration(input), {
      onNone: () =>
        Effect.fail(
          ValidationError.invalidValue(HelpDoc.p(`Invalid --timeout "${input}": expected e.g. 500ms, 30s, 2m`))
        ),
      onSome: Effect.succeed
    })
  ),
  Options.withDefault(Duration.seconds(30))
)

// Values stay redacted from the command line to the request: never in a usage error, a log line or the report.
const credentialsOption = Options.all({
  // Read as text and redacted at once: @effect/cli 0.77 refuses a repeated Options.redacted ("'<redacted>' is not a redacted").
  headers: Options.text("header").pipe(
    Options.withDescription("Send this header on every request, card included: 'Name: value'. Repeatable."),
    repeatable,
    Options.map((headers) => headers.map(Redacted.make))
  ),
  apiKey: Options.redacted("api-key").pipe(
    Options.withDescription(
      `Send this key as the ${probe.apiKeyHeader} header: short for --header '${probe.apiKeyHeader}: KEY'.`
    ),
    Options.optional
  )
}).pipe(
  Options.mapEffect(({ apiKey, headers }) =>
    Either.match(probe.parseHeaders(headers, apiKey), {
      onLeft: (problem) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(`Invalid credentials: ${problem}`))),
      onRight: Effect.succeed
    })
  )
)

// The client's own logs repeat the report: shown only with --log-level (other than the default info).
const quietByDefault = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    FiberRef.get(FiberRef.currentMinimumLogLevel),
    (level) => level._tag === "Info" ? Logger.withMinimumLogLevel(effect, LogLevel.None) : effect
  )

const probeCommand = Command.make("probe", {
  url: Args.text({ name: "agent-url" }).pipe(
    Args.withDescription("The agent's base URL (or its card URL)."),
    Args.mapEffect((url) =>
      probe.isHttpUrl(url)
        ? Effect.succeed(url)
        : Effect.fail(HelpDoc.p(`Invalid agent-url "${url}": expected an http or https URL`))
    )
  ),
  text: Options.text("text").pipe(
    Options.withDescription("The message to send. Default: ping."),
    Options.withDefault("ping")
  ),
  timeout: timeoutOption,
  json: Options.boolean("json").pipe(Options.withDescription("Print one JSON object on stdout.")),
  transport: Options.choice("transport", internalTransport.all).pipe(
    Options.withDescription(
      "Call over this transport only (JSONRPC, HTTP+JSON or GRPC). Default: the client's choice from the card."
    ),
    Options.optional
  ),
  headers: credentialsOption,
  push: Options.boolean("push").pipe(
    Options.withDescription(
      "Open a push receiver on 127.0.0.1, send with push, and report the outcome pushed, or polled when no webhook came in time (JSON key push)."
    )
  ),
  trust: Options.text("trust").pipe(
    Options.withDescription(
      "Verify the card's signature with these public keys: a file holding a JWK or a JWKS, or a JWKS URL (exit 3 when it does not verify). The report says whether the card is signed either way."
    ),
    Options.mapEffect((input) =>
      Either.match(probe.parseTrust(input), {
        onLeft: (problem) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(`Invalid ${problem}`))),
        onRight: Effect.succeed
      })
    ),
    Options.optional
  )
}, ({ headers, json, push, text, timeout, transport, trust, url }) =>
  Effect.gen(function*() {
    const report = yield* quietByDefault(
      probe.probe({
        url,
        text,
        timeout,
        transport: Option.getOrUndefined(transport),
        headers,
        push,
        trust: Option.getOrUndefined(trust)
      })
    )
    yield* Console.log(json ? JSON.stringify(report) : probe.formatReport(report))
    return yield* exitWith(probe.exitCode(report))
  })).pipe(
    Command.withDescription(
      "Resolve the card, send one blocking message, and say which channel the call ended in (exit 0 Completed, 3 card resolution, 4 client error, a refusal for credentials included, 5 Failed, 6 other outcome, 2 usage)."
    )
  )

// ---------------------------------------------------------------------------
// find-error
// ---------------------------------------------------------------------------

const findErrorCommand = Command.make("find-error", {
  errorId: Args.text({ name: "error-id" }).pipe(
    Args.withDescription("The error id, e.g. 3f9c0a7b12de (ours, ADK Java's) or 3f9c0a7b (ADK Python's)."),
    Args.mapEffect((id) =>
      ErrorId.pattern.test(id)
        ? Effect.succeed(id)
        : Effect.fail(
          HelpDoc.p(`Invalid error-id "${id}": expected twelve or eight lowercase hex digits, e.g. 3f9c0a7b12de`)
        )
    )
  ),
  files: Args.text({ name: "files" }).pipe(
    Args.withDescription("JSON log files, plain or .gz; standard input when none."),
    // As `repeatable`: the default marks them optional in the usage line.
    Args.repeated,
    Args.withDefault<Array<string>>([])
  )
}, ({ errorId, files }) =>
  Effect.gen(function*() {
    const result = yield* findError.findError(errorId, files)
    if (result.matches === 0) yield* Console.error(`effect-a2a find-error: no log entry with error id ${errorId}`)
    return yield* exitWith(findError.exitCode(result))
  })).pipe(
    Command.withDescription(
      "Find the log entries of an error id, with their cause (exit 0 found, 1 none found, 3 a file cannot be read, 2 usage)."
    )
  )

// ---------------------------------------------------------------------------
// playground
// ---------------------------------------------------------------------------

const portOption = (name: string, description: string, fallback: number) =>
  Options.integer(name).pipe(
    Options.withDescription(description),
    Options.mapEffect((port) =>
      port >= 0 && port <= 65535
        ? Effect.succeed(port)
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`Invalid --${name} ${port}: expected 0 to 65535`)))
    ),
    Options.withDefault(fallback)
  )

// The value is never repeated in an error: a malformed one may well be a bare key.
const apiKeyOption = Options.text("api-key").pipe(
  Options.withDescription(
    "NAME=KEY: turns API-key authentication on (X-API-Key); the caller NAME holds KEY. Repeatable."
  ),
  repeatable,
  Options.mapEffect((values) => {
    if (values.length === 0) return Effect.succeed(undefined)
    const pairs: Array<readonly [string, Redacted.Redacted<string>]> = []
    for (const [index, value] of values.entries()) {
      const equals = value.indexOf("=")
      const name = equals < 0 ? "" : value.slice(0, equals).trim()
      const key = equals < 0 ? "" : value.slice(equals + 1)
      if (name === "" || key === "") {
        return Effect.fail(ValidationError.invalidValue(HelpDoc.p(
          `Invalid --api-key (number ${index + 1}): expected NAME=KEY, both non-empty (the value is not shown)`
        )))
      }
      pairs.push([name, Redacted.make(key)])
    }
    return Effect.try({
      try: () => (Authentication.apiKey({ keys: pairs }), pairs),
      catch: (error) => ValidationError.invalidValue(HelpDoc.p(`Invalid --api-key: ${describe(error)}`))
    })
  })
)

// The file's content is read here and kept redacted; the server loads it, and a key that does not load fails start-up.
const signKeyOption = Options.text("sign-key").pipe(
  Options.withDescription("Sign the card with this private key: a PEM or JWK file (effect-a2a keygen writes one)."),
  Options.mapEffect((file) =>
    Effect.try({
      try: (): A2AServer.SigningOptions => ({ key: Redacted.make(fs.readFileSync(file, "utf8")) }),
      catch: (error) => ValidationError.invalidValue(HelpDoc.p(`Cannot read --sign-key ${file}: ${describe(error)}`))
    })
  ),
  Options.optional,
  Options.map(Option.getOrUndefined)
)

const playgroundCommand = Command.make("playground", {
  host: Options.text("host").pipe(Options.withDescription("Default 127.0.0.1."), Options.withDefault("127.0.0.1")),
  port: portOption("port", "JSON-RPC, HTTP+JSON and the card. Default 8000; 0 picks a free port.", 8000),
  grpcPort: portOption(
    "grpc-port",
    "gRPC, served when its packages are installed. Default 0: a free port, printed at start.",
    0
  ),
  logFile: Options.text("log-file").pipe(
    Options.withDescription("Append the server's logs to this file, one JSON object per line."),
    Options.optional
  ),
  maxInFlight: Options.integer("max-in-flight").pipe(
    Options.withDescription("Serve at most N sends and subscriptions at once; the rest get HTTP 429 with Retry-After."),
    Options.mapEffect((n) =>
      n > 0
        ? Effect.succeed(n)
        : Effect.fail(
          ValidationError.invalidValue(HelpDoc.p(`Invalid --max-in-flight ${n}: expected a positive integer`))
        )
    ),
    Options.optional
  ),
  apiKeys: apiKeyOption,
  allowPushTargets: Options.text("allow-push-target").pipe(
    Options.withDescription(
      "A host, address or CIDR block webhooks may target although the SSRF guard refuses it (127.0.0.1 for a local webhook); repeatable."
    ),
    repeatable
  ),
  signing: signKeyOption,
  replication: Options.text("replication").pipe(
    Options.withDescription(
      "A PostgreSQL URL for tasks, the idempotency ledger, the push outbox and the event log: playgrounds on one database act as one server."
    ),
    Options.optional,
    Options.map(Option.getOrUndefined)
  ),
  conformance: Options.boolean("conformance").pipe(
    Options.withDescription(
      "Serve the A2A TCK's system under test: it behaves as the messageId prefix says (tck-complete-task, ...)."
    )
  ),
  requireExtension: Options.boolean("require-extension").pipe(
    Options.withDescription(
      "With --conformance: the card requires urn:a2a:tck:required-extension, so messages without it are refused (the TCK's CORE-CAP-004)."
    )
  )
}, (options) =>
  Effect.gen(function*() {
    const server = yield* A2AServer.A2AServer
    yield* Console.log(`playground listening on ${server.url}`)
    if (options.conformance) yield* Console.log("serving the A2A TCK's system under test (--conformance)")
    for (const transport of internalTransport.all) {
      const url = server.urls[transport]
      if (url !== undefined) yield* Console.log(`  ${transport.padEnd(9)} ${url}`)
    }
    if (options.apiKeys !== undefined) {
      const callers = Array.from(new Set(options.apiKeys.map(([name]) => name)))
      yield* Console.log(`authentication on: API keys in X-API-Key, for ${callers.join(", ")}`)
    }
    if (Option.isSome(server.replica)) {
      yield* Console.log(`replica ${server.replica.value}, one of those on its database`)
    }
    const signature = server.card.signatures[0]
    if (signature !== undefined) yield* Console.log(`card signed, kid ${jose.decodeProtectedHeader(signature).kid}`)
    return yield* Effect.never
  }).pipe(
    Effect.provide(playground.layer(options)),
    Effect.catchAll((error) =>
      Effect.zipRight(
        Console.error(`effect-a2a playground: ${describe(error)}`),
        Effect.fail(new ExitCode({ code: 1 }))
      )
    )
  )).pipe(
    Command.withDescription(
      "Serve a remote agent that ends the way the message asks: complete <text>, fail <message>, reject <reason>, input <question>, auth, cancel, sleep <ms>."
    )
  )

// ---------------------------------------------------------------------------
// keygen
// ---------------------------------------------------------------------------

const keygenCommand = Command.make("keygen", {
  out: Options.directory("out", { exists: "either" }).pipe(
    Options.withDescription("Where to write the key files. Default: the current directory."),
    Options.withDefault(".")
  )
}, ({ out }) =>
  keygen.write(out).pipe(
    Effect.flatMap(({ kid, privateKey, publicKey }) =>
      Console.log(
        [
          `kid         ${kid}`,
          `private key ${privateKey}   (effect-a2a playground --sign-key ${privateKey})`,
          `public key  ${publicKey}   (what verifiers trust)`
        ].join("\n")
      )
    ),
    Effect.catchAll((error) =>
      Effect.zipRight(Console.error(`effect-a2a keygen: ${error.message}`), Effect.fail(new ExitCode({ code: 1 })))
    )
  )).pipe(
    Command.withDescription(
      "Write an ES256 key pair for signing agent cards: a private JWK (kept to its owner) and a public JWK, both with the same kid."
    )
  )

// ---------------------------------------------------------------------------
// the root
// ---------------------------------------------------------------------------

const demoCommand = Command.make("demo", {}, () =>
  travelDemo.run.pipe(
    Effect.asVoid,
    // The report is the output; the orchestrator's own logs would interleave with it.
    Logger.withMinimumLogLevel(LogLevel.None)
  )).pipe(
    Command.withDescription("Runs the worked example: a travel orchestrator and a remote booking service on 127.0.0.1.")
  )

/** @internal */
export const subcommands = [probeCommand, findErrorCommand, playgroundCommand, keygenCommand, demoCommand] as const

const root = Command.make("effect-a2a", {}, () =>
  Effect.zipRight(
    Console.error(
      "effect-a2a: a command is required (probe, find-error, playground, keygen, demo); see effect-a2a --help"
    ),
    Effect.fail(new ExitCode({ code: usageExitCode }))
  )).pipe(Command.withDescription("Probe, serve and debug A2A agents across the failure boundary."))

/** @internal */
export const make = <R = never, E = never>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any name and parsed config: Command is invariant in both, and @effect/cli's withSubcommands itself takes Command<any, any, any, any>
  extra: ReadonlyArray<Command.Command<any, R, E, any>> = []
) =>
  // The built-ins come first, so the list is the non-empty tuple withSubcommands asks for.
  Command.withSubcommands(root, [...subcommands, ...extra])

/**
 * Whether to colour what goes to `stream`: only a terminal, and never with
 * `NO_COLOR` set to anything but the empty string (https://no-color.org).
 *
 * @internal
 */
export const colours = (
  stream: { readonly isTTY?: boolean | undefined } | undefined,
  noColor: string | undefined
): boolean => stream?.isTTY === true && (noColor === undefined || noColor === "")

// eslint-disable-next-line no-control-regex -- an ANSI colour code starts with the ESC control character
const ansiEscape = /\x1b\[[0-9;]*m/g

// @effect/cli colours its help and usage errors whatever the output is: written through here, they lose the escapes.
const plain = (write: (...args: ReadonlyArray<unknown>) => Effect.Effect<void>) => (...args: ReadonlyArray<unknown>) =>
  write(...args.map((arg) => typeof arg === "string" ? arg.replace(ansiEscape, "") : arg))

/** @internal */
export const run = <R = never, E = never>(
  argv: ReadonlyArray<string>,
  options: Cli.RunOptions<R, E> = {}
): Effect.Effect<number, never, R | CliApp.CliApp.Environment> =>
  Effect.gen(function*() {
    const noColor = Option.getOrUndefined(
      yield* Config.option(Config.string("NO_COLOR")).pipe(Effect.orElseSucceed(Option.none))
    )
    const stdout = colours(globalThis.process?.stdout, noColor)
    const stderr = colours(globalThis.process?.stderr, noColor)
    const console = yield* Console.consoleWith(Effect.succeed)
    return yield* Command.run(make(options.extra ?? []), { name: "effect-a2a", version: options.version ?? "0.1.0" })(
      argv
    ).pipe(
      Effect.as(0),
      Effect.catchAll((error: unknown) => {
        if (error instanceof ExitCode) return Effect.succeed(error.code)
        if (ValidationError.isValidationError(error)) return Effect.succeed(usageExitCode)
        return Effect.as(Console.error(`effect-a2a: ${describe(error)}`), 1)
      }),
      Effect.catchAllDefect((defect) => Effect.as(Console.error(Cause.pretty(Cause.die(defect))), 1)),
      Effect.withConsole({
        ...console,
        log: stdout ? console.log : plain(console.log),
        error: stderr ? console.error : plain(console.error)
      }),
      Effect.provide(Layer.mergeAll(
        Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true, colors: stderr })),
        Logger.remove(Logger.prettyLoggerDefault)
      ))
    )
  })
