/**
 * The client of one remote A2A agent, as a service built by a Layer.
 *
 * Building the layer resolves the agent card, so a remote that is missing at
 * start-up fails start-up with an `AgentCardResolutionError`, or, with
 * `onCardFailure: "degrade"`, yields an unavailable agent whose every call
 * fails with an explained `A2AClientError` (reason `Unavailable`) until its
 * card resolves (`recover`).
 *
 * Every call ends in a `RemoteOutcome` (a FAILED task included) or a typed
 * `A2AClientError`; nothing else escapes.
 *
 * @since 0.1.0
 */
import type { AgentCard } from "@a2a-js/sdk"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as LogLevel from "effect/LogLevel"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Schedule from "effect/Schedule"
import type * as Stream from "effect/Stream"
import type * as jose from "jose"
import type * as A2AClientError from "./A2AClientError.js"
import type * as AgentCardResolutionError from "./AgentCardResolutionError.js"
import * as internal from "./internal/client/remoteAgent.js"
import type * as internalTransport from "./internal/wire/transport.js"
import type * as Part from "./Part.js"
import type * as PushReceiver from "./PushReceiver.js"
import type * as RemoteEvent from "./RemoteEvent.js"
import type * as RemoteOutcome from "./RemoteOutcome.js"

/**
 * A message to send: plain text, or parts with an optional conversation
 * (`contextId`), task to continue (`taskId`) and metadata.
 *
 * @example
 * ```ts
 * import { Part, RemoteAgent } from "effect-a2a"
 *
 * const simple: RemoteAgent.Input = "book flight 4821 for Ana"
 * const detailed: RemoteAgent.Input = {
 *   parts: [Part.TextPart.make({ text: "book this flight" }), Part.DataPart.make({ data: { flight: "4821" } })],
 *   contextId: "trip-42",
 *   metadata: { channel: "web" }
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export type Input =
  | string
  | {
    readonly parts: ReadonlyArray<Part.Part>
    readonly contextId?: string | undefined
    readonly taskId?: string | undefined
    readonly metadata?: Part.JsonObject | undefined
  }

/**
 * Per-call options.
 *
 * @example
 * ```ts
 * import { RemoteAgent } from "effect-a2a"
 *
 * declare const booking: RemoteAgent.RemoteAgent
 * const options: RemoteAgent.CallOptions = { timeout: "2 minutes", idempotencyKey: "order-1234", headers: { "x-tenant": "acme" } }
 * booking.send("book flight 4821 for Ana", options)
 * ```
 * @category options
 * @since 0.1.0
 */
export interface CallOptions {
  /**
   * Extra HTTP headers for this call, over the agent's (names compared
   * without case). A `Redacted` value is opened only where the request is
   * written, never in a log line, an error or a span.
   */
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted>> | undefined
  /** Overrides the agent's timeout for this call. */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * Sent as message metadata under `Idempotency.metadataKey` and as the
   * `Idempotency-Key` header, so the server can recognise a repeat. See
   * `Idempotency.deriveKey`.
   */
  readonly idempotencyKey?: string | undefined
  /**
   * Cancels the remote task (A2A `CancelTask`) when this call is interrupted
   * or times out after it learnt the task's id (from a stream's event, or a
   * blocking send's answer or poll) and before it saw the task end, so the
   * remote does not go on working for nobody. The cancel goes out in a fiber
   * of its own, so the interruption is not delayed, within the call's
   * timeout and at most 5 seconds. It is best effort: its failure is logged
   * at `Debug`, never raised. A stream the caller stops reading early
   * (`Stream.take`) ends without it: it was neither interrupted nor out of
   * time. Overrides the agent's `cancelOnInterrupt`; off by default.
   */
  readonly cancelOnInterrupt?: boolean | undefined
  /**
   * Has the task push its notifications to this receiver (A2A push
   * notifications): the config, with a fresh token for the task, rides on
   * the request's `configuration.taskPushNotificationConfig`. A `send` then
   * asks to be answered at once (`returnImmediately`) and waits for the
   * outcome by push, falling back to polling as `awaitOutcome` does, with
   * this call's timeout; a `stream` reads its events as usual, and the
   * receiver gets them too. An agent whose card does not declare
   * `capabilities.pushNotifications` fails the call with reason
   * `InvalidRequest`, delivery `NotSent`, before anything is sent.
   */
  readonly push?: PushReceiver.PushReceiver | undefined
}

/**
 * How {@link RemoteAgent.awaitOutcome} waits for a task's outcome.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { PushReceiver, RemoteAgent } from "effect-a2a"
 *
 * declare const booking: RemoteAgent.RemoteAgent
 * declare const receiver: PushReceiver.PushReceiver
 * const options: RemoteAgent.AwaitOptions = { receiver, timeout: "1 minute", pollEvery: "5 seconds" }
 * const outcome = booking.awaitOutcome("task-1", options)
 * ```
 * @category options
 * @since 0.1.0
 */
export interface AwaitOptions {
  /** The receiver the task pushes to. */
  readonly receiver: PushReceiver.PushReceiver
  /** How long to wait for the pushed outcome, and then how long to poll for it. Default the agent's timeout. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Between two polls. Default 1 second. */
  readonly pollEvery?: Duration.DurationInput | undefined
  /** Extra HTTP headers for the polls, as a call's. */
  readonly headers?: CallOptions["headers"]
}

/**
 * @category models
 * @since 0.1.0
 */
export interface RemoteAgent {
  readonly name: string
  readonly url: string
  /** The resolved card; none for an agent degraded at start-up. */
  readonly card: Option.Option<AgentCard>
  /**
   * The transport its calls go over, chosen from the card; none for an
   * agent degraded at start-up (until it recovers) or a test double.
   */
  readonly transport?: Transport | undefined
  /** Sends a message and waits for the task to end (blocking send). */
  readonly send: (
    input: Input,
    options?: CallOptions
  ) => Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>
  /**
   * Streams progress; the last event is `Finished` with the outcome. A
   * stream cut after its first event recovers: where the card declares the
   * resume extension (`urn:effect-a2a:ext:resume:v1`, as `A2AServer` with
   * `replication` does) it resubscribes right after the last event it saw
   * (`SubscribeToTask` with `Last-Event-ID`), on any replica, five times at
   * most, so the stream shows every event once, in order; elsewhere, or
   * when the server refuses that, it asks for the task's state once
   * (`GetTask`) and polls until the task ends.
   */
  readonly stream: (
    input: Input,
    options?: CallOptions
  ) => Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError>
  /**
   * Streams the events of a task already sent (A2A `SubscribeToTask`), as
   * `stream` does, the last `Finished` with its outcome: to follow a task
   * after a stream was lost, or one another caller started.
   */
  readonly resubscribe: (
    taskId: string,
    options?: CallOptions
  ) => Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError>
  readonly getTask: (
    taskId: string,
    options?: CallOptions
  ) => Effect.Effect<RemoteOutcome.TaskView, A2AClientError.A2AClientError>
  readonly cancel: (
    taskId: string,
    options?: CallOptions
  ) => Effect.Effect<RemoteOutcome.TaskView, A2AClientError.A2AClientError>
  /**
   * Waits for the outcome of a task that pushes to `options.receiver`: by
   * push within `timeout`, then, when no webhook came in time, by polling
   * `GetTask` within `timeout` again, so a lost webhook never loses the
   * outcome (a push that comes while polling still wins). A pushed outcome
   * counts in the same metrics and log annotations as a call's, with the
   * annotation `channel: "push"`; one polled counts as the `GetTask` that
   * read it. No outcome by then fails with reason `Timeout`.
   */
  readonly awaitOutcome: (
    taskId: string,
    options: AwaitOptions
  ) => Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>
}

/**
 * An A2A transport, as cards name it: `"JSONRPC"`, `"HTTP+JSON"` or `"GRPC"`.
 *
 * @example
 * ```ts
 * import { RemoteAgent } from "effect-a2a"
 *
 * const preference: ReadonlyArray<RemoteAgent.Transport> = ["GRPC", "HTTP+JSON", "JSONRPC"]
 * ```
 * @category models
 * @since 0.1.0
 */
export type Transport = internalTransport.Transport

/**
 * The default tag. For several remote agents in one application, give each
 * its own tag:
 *
 * @example
 * ```ts
 * import { Context, Layer } from "effect"
 * import { RemoteAgent } from "effect-a2a"
 *
 * class Booking extends Context.Tag("Booking")<Booking, RemoteAgent.RemoteAgent>() {}
 * const BookingLive = Layer.effect(Booking, RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000" }))
 * ```
 * @category tags
 * @since 0.1.0
 */
export const RemoteAgent: Context.Tag<RemoteAgent, RemoteAgent> = Context.GenericTag<RemoteAgent>(
  "effect-a2a/RemoteAgent"
)

/**
 * A key a {@link Trust} resolver answers with: a public key as jose takes
 * it, or a public JWK.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { RemoteAgent } from "effect-a2a"
 *
 * declare const keysByKid: ReadonlyMap<string, RemoteAgent.TrustedKey>
 * const trust: RemoteAgent.Trust = {
 *   resolve: (header) => Effect.fromNullable(keysByKid.get(header.kid ?? ""))
 * }
 * ```
 * @category options
 * @since 0.1.0
 */
export type TrustedKey = jose.CryptoKey | jose.KeyObject | jose.JWK

/**
 * The keys the card's signature must be made with: public JWKs (each with
 * its `kid`), the URL of a JWKS fetched once while the layer is built, or a
 * resolver given the signature's protected header. The card's own `jku` is
 * never fetched: it is the card's author who writes it. `required`
 * (default `true`) refuses an unsigned card with reason `Unsigned`.
 *
 * Only asymmetric algorithms are accepted (`ES*`, `RS*`, `PS*`, `EdDSA`);
 * `alg: none` and `HS*` are refused with reason `InvalidSignature`, as is a
 * card signed in v0.3 form, whose endpoints no signature covers. A JWK has
 * no expiry: a key is valid for as long as this option lists it (or the
 * JWKS serves it when the layer is built), so rotate keys there. A verified
 * card is routed by what its signature covers (`AgentCard.fromJSON` of it),
 * and an extended card is checked the same way.
 *
 * @example
 * ```ts
 * import { RemoteAgent } from "effect-a2a"
 *
 * const BookingLive = RemoteAgent.layer({
 *   name: "booking",
 *   url: "https://booking.internal",
 *   trust: { jwks: "https://keys.internal/booking.jwks.json" }
 * })
 * ```
 * @category options
 * @since 0.1.0
 */
export type Trust =
  & (
    | { readonly keys: ReadonlyArray<jose.JWK> }
    | { readonly jwks: string | URL }
    | { readonly resolve: (header: jose.JWSHeaderParameters) => Effect.Effect<TrustedKey, unknown> }
  )
  & { readonly required?: boolean | undefined }

/**
 * How {@link make} and {@link layer} reach the agent and how long they wait.
 *
 * @example
 * ```ts
 * import { Effect, Redacted } from "effect"
 * import { RemoteAgent } from "effect-a2a"
 *
 * const options: RemoteAgent.Options = {
 *   name: "booking",
 *   url: "https://booking.internal",
 *   timeout: "10 seconds",
 *   onCardFailure: "degrade",
 *   headers: { authorization: Redacted.make(`Bearer ${process.env["BOOKING_TOKEN"] ?? ""}`) }
 * }
 * const BookingLive = RemoteAgent.layer(options)
 *
 * // a token that refreshes: computed before every call
 * declare const currentToken: Effect.Effect<Redacted.Redacted>
 * const refreshing: RemoteAgent.Options = {
 *   name: "booking",
 *   url: "https://booking.internal",
 *   headers: Effect.map(currentToken, (token) => ({ authorization: Redacted.make(`Bearer ${Redacted.value(token)}`) }))
 * }
 * ```
 * @category options
 * @since 0.1.0
 */
export interface Options {
  /** The name used in errors, logs and metrics. */
  readonly name: string
  /** The agent's base URL; the card is read from `cardPath` below it. */
  readonly url: string
  /** Use this card instead of fetching one. */
  readonly card?: AgentCard | undefined
  /** Default `/.well-known/agent-card.json`. */
  readonly cardPath?: string | undefined
  /** Per call; for streams, the longest wait between two events. Default 30 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Default 10 seconds. */
  readonly cardTimeout?: Duration.DurationInput | undefined
  /**
   * `"fail"` (default) stops start-up; `"degrade"` provides an unavailable
   * agent, which becomes the real client once its card resolves (see
   * `recover`).
   */
  readonly onCardFailure?: "fail" | "degrade" | undefined
  /**
   * With `onCardFailure: "degrade"`: when a degraded agent resolves its card
   * again, as a `Schedule` fed with each resolution's error (by default after
   * 1 second, doubling, then every 30 seconds), or `false` never to. A
   * resolution starts in the background on a call, at most once per delay of
   * the schedule; until one succeeds, calls fail with reason `Unavailable`
   * as before, and none waits for it. The one that succeeds is logged.
   */
  readonly recover?: Schedule.Schedule<unknown, AgentCardResolutionError.AgentCardResolutionError> | false | undefined
  /**
   * The transports to prefer, best first, among those the card offers (the
   * SDK's `preferredTransports`); by default the card's own order decides.
   * A transport the card does not offer is skipped. gRPC needs the optional
   * packages `@grpc/grpc-js` and `@bufbuild/protobuf`, loaded only when the
   * card offers gRPC or it is preferred: without them gRPC alone is lost,
   * and a card that offers only gRPC fails with `NoCompatibleTransport`,
   * naming them. gRPC takes no fetch: the `HttpClient` in context carries
   * JSON-RPC and HTTP+JSON only, and headers travel as gRPC metadata.
   */
  readonly transports?: ReadonlyArray<Transport> | undefined
  /**
   * gRPC's channel credentials: a `ChannelCredentials` of `@grpc/grpc-js`
   * (`grpc.credentials.createSsl(…)`), typed loosely here as that package is
   * an optional peer. Insecure by default, for loopback. Ignored by JSON-RPC
   * and HTTP+JSON, whose TLS is the URL's and the fetch's.
   */
  readonly grpcChannelCredentials?: object | undefined
  /**
   * Largest accepted non-streaming response body, on JSON-RPC and
   * HTTP+JSON. Default 10 MiB. gRPC answers are held to grpc-js's own 4 MiB
   * per message (the SDK sets no channel options); one over it is
   * `InvalidResponse`, `Unknown`: the agent ran.
   */
  readonly maxResponseBytes?: number | undefined
  /**
   * HTTP headers sent with every request: a record, or an Effect computing
   * one, run before every call (a bearer token that refreshes) and once for
   * the card. A `Redacted` value is opened only where the request is
   * written, never in a log line, an error or a span. When the Effect fails
   * or dies, the call fails with reason `InvalidRequest`, delivery
   * `NotSent`, and nothing is sent (the card resolution with reason
   * `InvalidRequest`); its error is not told, as it may hold the secret.
   */
  readonly headers?:
    | Readonly<Record<string, string | Redacted.Redacted>>
    | Effect.Effect<Readonly<Record<string, string | Redacted.Redacted>>, unknown>
    | undefined
  /**
   * The level of the log line of a failed call (an `A2AClientError`);
   * `Debug` by default, as the caller gets the typed error and decides.
   * Outcomes, a FAILED one included, log at `Debug`. Their task, context
   * and error ids are annotations of the line and attributes of the span.
   */
  readonly logLevel?: LogLevel.LogLevel | undefined
  /**
   * The default of every call's `CallOptions.cancelOnInterrupt`: cancel the
   * remote task, best effort, when a call that knows its id is interrupted
   * or times out before the task ended. Off by default.
   */
  readonly cancelOnInterrupt?: boolean | undefined
  /**
   * Check the card's signature against these keys before a transport is
   * chosen from it; see {@link Trust}. Absent, the card is taken as served.
   */
  readonly trust?: Trust | undefined
}

/**
 * An agent whose card could not be resolved at start-up: every call fails
 * with reason `Unavailable`, delivery `NotSent`, explaining why.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { AgentCardResolutionError, RemoteAgent } from "effect-a2a"
 *
 * // a test layer for the degraded path: every call fails with reason "Unavailable"
 * const BookingDown = Layer.succeed(RemoteAgent.RemoteAgent, RemoteAgent.unavailable(
 *   new AgentCardResolutionError.AgentCardResolutionError({ agent: "booking", url: "http://127.0.0.1:8000", reason: "Unreachable", detail: "connect ECONNREFUSED" })
 * ))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const unavailable: (cause: AgentCardResolutionError.AgentCardResolutionError) => RemoteAgent =
  internal.unavailable

/**
 * Resolves the card and builds the client.
 *
 * With an `HttpClient` (`@effect/platform`) in context where `make` runs,
 * every request of the agent (the card's included) goes through it, so its
 * middleware, proxy, auth and test doubles apply; without one, the global
 * `fetch` is called directly, the fastest path. On both, the requests are
 * tracked the same (sent or not, status, `Retry-After`), bodies are bounded
 * by `maxResponseBytes`, and a call's redirect is answered, not followed: it
 * fails with reason `HttpStatus`. Through `FetchHttpClient` the calls run
 * with `FetchHttpClient.RequestInit` `redirect: "manual"` (over the one in
 * context), so it hands the 3xx over; a client that follows redirects itself
 * (`HttpClient.followRedirects`, or one on another transport) decides for
 * itself, and what it follows is then the request the call made. The card's
 * request follows redirects as the client does. The client's own spans are
 * off for these requests: each call has its client span, whose `traceparent`
 * goes to the server.
 *
 * @example
 * ```ts
 * import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
 * import { Effect, Layer } from "effect"
 * import { RemoteAgent } from "effect-a2a"
 *
 * // every request of the agent carries the tenant header set by the user's client
 * const Tenant = Layer.effect(
 *   HttpClient.HttpClient,
 *   Effect.map(HttpClient.HttpClient, HttpClient.mapRequest(HttpClientRequest.setHeader("x-tenant", "acme")))
 * ).pipe(Layer.provide(FetchHttpClient.layer))
 * const booking = RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000" }).pipe(Effect.provide(Tenant))
 * ```
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { RemoteAgent, RemoteOutcome } from "effect-a2a"
 *
 * const program = Effect.gen(function*() {
 *   const booking = yield* RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000" })
 *   const outcome = yield* booking.send("book flight 4821 for Ana")
 *   return RemoteOutcome.$match({
 *     Completed: (o) => o.text,
 *     Failed: (o) => `failed (error id ${Option.getOrElse(o.errorId, () => "none")})`,
 *     Canceled: () => "canceled",
 *     Rejected: (o) => o.text,
 *     InputRequired: (o) => o.text,
 *     AuthRequired: () => "auth required"
 *   })(outcome)
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make: (options: Options) => Effect.Effect<RemoteAgent, AgentCardResolutionError.AgentCardResolutionError> =
  internal.make

/**
 * A layer providing {@link RemoteAgent}; building it resolves the card.
 *
 * @example
 * ```ts
 * import { RemoteAgent } from "effect-a2a"
 *
 * const BookingLive = RemoteAgent.layer({ name: "booking", url: "http://127.0.0.1:8000", onCardFailure: "degrade" })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<RemoteAgent, AgentCardResolutionError.AgentCardResolutionError> =>
  Layer.effect(RemoteAgent, make(options))

/**
 * A layer providing {@link RemoteAgent} from options read through `Config`,
 * as `@effect/sql-pg`'s `PgClient.layerConfig` does: each option given is a
 * `Config` of it (`Config.succeed` for a fixed one). A missing or invalid
 * setting fails the layer with a `ConfigError`, before any request; then
 * the card is resolved as {@link layer} does.
 *
 * @example
 * ```ts
 * import { Config } from "effect"
 * import { RemoteAgent } from "effect-a2a"
 *
 * // BOOKING_URL, and optionally BOOKING_NAME and BOOKING_TIMEOUT (e.g. "10 seconds")
 * const BookingLive = RemoteAgent.layerConfig({
 *   name: Config.string("BOOKING_NAME").pipe(Config.withDefault("booking")),
 *   url: Config.string("BOOKING_URL"),
 *   timeout: Config.duration("BOOKING_TIMEOUT").pipe(Config.withDefault("30 seconds")),
 *   onCardFailure: Config.succeed("degrade")
 * })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<RemoteAgent, AgentCardResolutionError.AgentCardResolutionError | ConfigError.ConfigError> =>
  Layer.effect(RemoteAgent, Effect.flatMap(Config.unwrap(config), make))
