/**
 * `effect-a2a playground`: a remote agent, served by our own server and
 * executor, that ends the way the message text asks.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as A2AServer from "../A2AServer.js"
import * as AgentExecutor from "../AgentExecutor.js"
import * as Authentication from "../Authentication.js"
import type * as Cli from "../Cli.js"
import * as conformance from "../demo/conformance.js"
import * as IdempotencyLedger from "../IdempotencyLedger.js"
import * as Observability from "../Observability.js"
import * as Part from "../Part.js"

/**
 * The failure the playground raises for `fail <message>`. Its message stays
 * in the server's log; the caller sees only the error id.
 *
 * @internal
 */
export class PlaygroundError extends Schema.TaggedError<PlaygroundError>("effect-a2a/PlaygroundError")(
  "PlaygroundError",
  {
    reason: Schema.Literal("Requested"),
    message: Schema.String
  }
) {}

/**
 * The longest `sleep` the playground accepts.
 *
 * @internal
 */
export const maxSleep = Duration.minutes(10)

/**
 * The text of a request's message, its text parts joined by new lines.
 *
 * @internal
 */
export const requestText = (request: AgentExecutor.AgentRequest): string => Part.textOf(request.message.parts)

/**
 * The first word of the text, and the rest.
 *
 * @internal
 */
export const parseCommand = (text: string): { readonly command: string; readonly argument: string } => {
  const trimmed = text.trim()
  const match = /^(\S+)\s*([\s\S]*)$/.exec(trimmed)
  return match === null ? { command: "", argument: "" } : { command: match[1] ?? "", argument: match[2] ?? "" }
}

/**
 * The playground's admission hook: `cancel` is refused before the agent
 * runs, so the task ends CANCELED.
 *
 * @internal
 */
export const admission = (request: AgentExecutor.AgentRequest): Effect.Effect<boolean> =>
  Effect.succeed(parseCommand(requestText(request)).command === "cancel")

/**
 * The playground agent: `complete <text>`, `fail <message>`,
 * `reject <reason>`, `input <question>`, `auth`, `sleep <ms>`; anything else
 * completes, echoing the text. (`cancel` is handled by {@link admission}.)
 *
 * @internal
 */
export const agent: AgentExecutor.Agent<PlaygroundError> = (request) => {
  const text = requestText(request)
  const { argument, command } = parseCommand(text)
  switch (command) {
    case "complete": {
      const artifact = new Part.Artifact({
        artifactId: crypto.randomUUID(),
        name: "result",
        description: "the text asked for",
        parts: [Part.TextPart.make({ text: argument })]
      })
      return Effect.succeed(AgentExecutor.completedText(argument, [artifact]))
    }
    case "fail":
      return Effect.fail(new PlaygroundError({ reason: "Requested", message: argument || "failure requested" }))
    case "reject":
      return Effect.succeed(AgentExecutor.Rejected({ reason: argument || "Rejected on request." }))
    case "input":
      return Effect.succeed(AgentExecutor.InputRequired({ question: argument || "More input is required." }))
    case "auth":
      return Effect.succeed(AgentExecutor.AuthRequired({ text: argument || "Authentication is required." }))
    case "sleep": {
      const millis = Number(argument)
      if (argument === "" || !Number.isFinite(millis) || millis < 0) {
        return Effect.succeed(
          AgentExecutor.Rejected({ reason: `sleep needs a number of milliseconds, got "${argument}"` })
        )
      }
      const slept = Math.min(Math.floor(millis), Duration.toMillis(maxSleep))
      return Effect.as(Effect.sleep(Duration.millis(slept)), AgentExecutor.completedText(`slept ${slept} ms`))
    }
    default:
      return Effect.succeed(AgentExecutor.completedText(text))
  }
}

/**
 * The playground server (or, with `conformance`, the TCK's system under
 * test), with its JSON file logger when asked for.
 *
 * @internal
 */
export const layer = (options: Cli.PlaygroundOptions) => {
  const server = A2AServer.layer({
    ...(options.conformance === true
      ? { agent: conformance.agent, card: conformance.card(options.requireExtension === true), messageReplies: true }
      : {
        agent,
        beforeExecute: admission,
        card: {
          name: "playground",
          description:
            "Ends the way the message asks: complete <text>, fail <message>, reject <reason>, input <question>, auth, cancel, sleep <ms>; anything else is echoed."
        }
      }),
    host: options.host,
    port: options.port,
    // On the same host; its packages are optional, and without them the playground serves the other two.
    grpc: { host: options.host, port: options.grpcPort ?? 0 },
    // Short enough that a restarted playground's card is read again soon; long enough that a client
    // resolving it for every call in a loop hits its cache (or gets a 304) instead of the server.
    cardMaxAge: 10,
    maxInFlight: Option.getOrUndefined(options.maxInFlight ?? Option.none()),
    authenticate: options.apiKeys === undefined ? undefined : Authentication.apiKey({ keys: options.apiKeys }),
    push: { allowPushTargets: options.allowPushTargets },
    signing: options.signing,
    ...(options.replication === undefined ? {} : {
      taskStore: A2AServer.TaskStoreConfig.Postgres({ url: options.replication }),
      idempotency: {},
      replication: { url: options.replication }
    })
  })
  const replicated = options.replication === undefined
    ? server
    : Layer.provide(server, IdempotencyLedger.layerPg({ url: options.replication }))
  return Option.match(options.logFile, {
    onNone: () => replicated,
    onSome: (file) => Layer.provide(replicated, Observability.layerJsonLogs({ file }))
  })
}
