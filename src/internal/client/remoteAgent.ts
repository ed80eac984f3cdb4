/**
 * The client of one remote agent: the card's resolution, then the
 * operations, each built once per agent over the call engine.
 *
 * @internal
 */
import { AgentCard } from "@a2a-js/sdk"
import { type Client, DefaultAgentCardResolver } from "@a2a-js/sdk/client"
import * as HttpClient from "@effect/platform/HttpClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleIntervals from "effect/ScheduleIntervals"
import * as Stream from "effect/Stream"
import * as A2AClientError from "../../A2AClientError.js"
import * as AgentCardResolutionError from "../../AgentCardResolutionError.js"
import type { CallOptions, Options, RemoteAgent } from "../../RemoteAgent.js"
import * as EventId from "../wire/eventId.js"
import * as clientCall from "./call/call.js"
import { type Binding, type CallRecord, classifyCard } from "./call/classify.js"
import * as input from "./call/input.js"
import * as send from "./call/send.js"
import * as stream from "./call/stream.js"
import * as task from "./call/task.js"
import * as cardForm from "./card/cardForm.js"
import { select } from "./card/selection.js"
import * as trust from "./card/trust.js"
import * as push from "./push/push.js"
import { missing as grpcMissing } from "./transport/grpc.js"
import * as httpClientFetch from "./transport/httpClientFetch.js"
import { cardFetch, mergeHeaders, track } from "./transport/transport.js"

type Headers = Readonly<Record<string, string | Redacted.Redacted>>

/** The agent's headers when they are computed per call; a static record is none. */
const computedHeaders = (headers: Options["headers"]): Effect.Effect<Headers, unknown> | undefined =>
  Effect.isEffect(headers) ? headers : undefined

const headersFailed = "the agent's headers could not be computed (their Effect failed)"

/**
 * The agent's operations with its headers computed before each call and
 * put under the call's own (which win, names compared without case), so
 * that they travel as the call's headers do. A failure is the call's typed
 * `InvalidRequest`: nothing was sent. Its cause is not told, as it may hold
 * the secret being computed.
 */
const withComputedHeaders = (
  operations: RemoteAgent,
  headers: Effect.Effect<Headers, unknown>,
  errorLevel: LogLevel.LogLevel
): RemoteAgent => {
  const agent = operations.name
  const errors = clientCall.counter("a2a.client_error", agent, { reason: "InvalidRequest" })
  const fail = (operation: A2AClientError.Operation, ids: clientCall.Ids, detail: string) => {
    const invalid = input.invalidRequest(agent, operation, ids, detail)
    const transport = operations.transport
    const error = transport === undefined ? invalid : new A2AClientError.A2AClientError({ ...invalid, transport })
    return Metric.update(errors, 1).pipe(
      Effect.zipRight(Effect.logWithLevel(errorLevel, error.message)),
      Effect.annotateLogs({ agent, reason: error.reason, delivery: error.delivery }),
      Effect.zipRight(Effect.fail(error))
    )
  }
  const optionsFor = (
    operation: A2AClientError.Operation,
    ids: clientCall.Ids,
    options: CallOptions | undefined
  ): Effect.Effect<CallOptions, A2AClientError.A2AClientError> =>
    Effect.matchCauseEffect(headers, {
      onFailure: () => fail(operation, ids, headersFailed),
      onSuccess: (computed) => {
        const problem = input.headersProblem(computed, "the agent's")
        if (problem !== undefined) return fail(operation, ids, problem)
        const own = options?.headers
        return Effect.succeed({
          ...options,
          headers: mergeHeaders(clientCall.plainHeaders(computed), own && clientCall.plainHeaders(own))
        })
      }
    })
  return {
    ...operations,
    send: (message, options) =>
      Effect.flatMap(optionsFor("SendMessage", input.inputIds(message), options), (o) => operations.send(message, o)),
    stream: (message, options) =>
      Stream.unwrap(
        Effect.map(optionsFor("SendStreamingMessage", input.inputIds(message), options), (o) =>
          operations.stream(message, o))
      ),
    resubscribe: (taskId, options) =>
      Stream.unwrap(
        Effect.map(optionsFor("SubscribeToTask", { taskId }, options), (o) => operations.resubscribe(taskId, o))
      ),
    getTask: (taskId, options) =>
      Effect.flatMap(optionsFor("GetTask", { taskId }, options), (o) => operations.getTask(taskId, o)),
    cancel: (taskId, options) =>
      Effect.flatMap(optionsFor("CancelTask", { taskId }, options), (o) => operations.cancel(taskId, o))
  }
}

const makeClient = (
  agentOptions: Options,
  client: Client,
  card: AgentCard,
  binding: Binding,
  staticHeaders: Readonly<Record<string, string>> | undefined
): RemoteAgent => {
  const agent = agentOptions.name
  const timeout = Duration.decode(agentOptions.timeout ?? Duration.seconds(30))
  const computed = computedHeaders(agentOptions.headers)
  const context: task.AgentContext = {
    agent,
    client,
    timeout,
    track,
    engine: clientCall.make(agent, track, timeout, binding, staticHeaders, agentOptions.logLevel),
    // Computed headers are checked when computed, with each call.
    unsendable: input.unsendable(computed === undefined ? agentOptions.headers as Headers | undefined : undefined),
    cancelOnInterrupt: agentOptions.cancelOnInterrupt === true,
    resumable: card.capabilities?.extensions?.some((extension) => extension.uri === EventId.resumeExtensionUri) === true
  }
  const { cancel, getTask, readTask } = task.make(context)
  const awaitEnd = send.awaitEnd(agent, readTask)
  const sends = send.make(context, awaitEnd)
  const streams = stream.make(context, readTask, awaitEnd)
  const pushed = push.make(context, card, sends.sendForTask, streams.streamWith)
  const operations: RemoteAgent = {
    name: agent,
    url: agentOptions.url,
    card: Option.some(card),
    transport: binding.transport,
    send: (message, options) =>
      options?.push === undefined
        ? sends.send(message, options)
        : pushed.send(getTask)(message, { ...options, push: options.push }),
    stream: (message, options) =>
      options?.push === undefined
        ? streams.stream(message, options)
        : pushed.stream(message, { ...options, push: options.push }),
    resubscribe: streams.resubscribe,
    getTask,
    cancel,
    awaitOutcome: pushed.awaitOutcome(getTask)
  }
  if (computed === undefined) return operations
  const withHeaders = withComputedHeaders(operations, computed, agentOptions.logLevel ?? LogLevel.Debug)
  // Its polls are the agent's GetTask calls, with their computed headers.
  return { ...withHeaders, awaitOutcome: pushed.awaitOutcome(withHeaders.getTask) }
}

/** An agent whose every call fails with reason `Unavailable`. @internal */
export const unavailable = (cause: AgentCardResolutionError.AgentCardResolutionError): RemoteAgent => {
  const fail = (operation: A2AClientError.Operation) =>
    new A2AClientError.A2AClientError({
      agent: cause.agent,
      operation,
      reason: "Unavailable",
      delivery: "NotSent",
      detail: `the agent was not available at start-up: ${cause.message}`
    })
  const errorCounter = clientCall.counter("a2a.client_error", cause.agent, { reason: "Unavailable" })
  const failing = (operation: A2AClientError.Operation) =>
    Metric.update(errorCounter, 1).pipe(Effect.zipRight(Effect.fail(fail(operation))))
  return {
    name: cause.agent,
    url: cause.url,
    card: Option.none(),
    send: () => failing("SendMessage"),
    stream: () => Stream.fromEffect(failing("SendStreamingMessage")),
    resubscribe: () => Stream.fromEffect(failing("SubscribeToTask")),
    getTask: () => failing("GetTask"),
    cancel: () => failing("CancelTask"),
    awaitOutcome: () => failing("GetTask")
  }
}

/** How long the card's resolution may take: 10 seconds by default. */
const cardTimeout = (options: Options): Duration.Duration =>
  Duration.decode(options.cardTimeout ?? Duration.seconds(10))

/** The card's check, as the promise the resolution runs: the card to route by, or a thrown `CardContentError`. */
type Check = (raw: unknown, normalized: AgentCard) => Promise<AgentCard>

const resolveClient = (
  options: Options,
  base: typeof fetch | undefined,
  headers: Readonly<Record<string, string>>,
  check: Check | undefined
) =>
  Effect.gen(function*() {
    const maxBytes = options.maxResponseBytes ?? 10 * 1024 * 1024
    const record: CallRecord = { sent: false }
    const cardMillis = Duration.toMillis(cardTimeout(options))
    const context = { agent: options.name, url: options.url, record }
    const resolve = async (signal: AbortSignal) => {
      const resolver = new DefaultAgentCardResolver({
        fetchImpl: cardFetch(record, signal, maxBytes, headers, base),
        legacyCompat: { enabled: true },
        ...(options.cardPath === undefined ? {} : { path: options.cardPath })
      })
      // The card as served, before the SDK reads a v0.3 one as v1.0: the signature is over its canonical form.
      // Read in either v1.0 form, here and wherever the SDK's client factory reads it again.
      let raw: unknown = options.card
      const normalize = cardForm.normalizer(resolver.normalizeAgentCard.bind(resolver))
      resolver.normalizeAgentCard = (served) => {
        raw ??= served
        return normalize(served)
      }
      // A base URL with a path is a directory, as the docs say: the card is below it, not beside it.
      const resolved = options.card ??
        (await resolver.resolve(options.url.endsWith("/") ? options.url : `${options.url}/`))
      // Checked before a transport is chosen from it.
      const card = check === undefined ? resolved : await check(raw, resolver.normalizeAgentCard(resolved))
      const { binding, client, grpcMissing } = await select(card, resolver, {
        transports: options.transports,
        grpcChannelCredentials: options.grpcChannelCredentials,
        maxResponseBytes: maxBytes,
        base
      })
      // May fetch the extended card: bounded like the rest of the resolution, with the agent's headers as every call has.
      // The SDK calls the check on the card it already has, too, unless an extended one is fetched.
      // The transports hand it over decoded: checked in proto JSON, the form it was served and signed in
      // (the SDK's canonical form of the decoded card would drop its security schemes).
      const extended = check === undefined || card.capabilities?.extendedAgentCard !== true
        ? undefined
        : async (served: AgentCard) => void (await check(AgentCard.toJSON(served), served))
      return {
        client,
        binding,
        grpcMissing,
        card: await client.getAgentCard({ signal, serviceParameters: { ...headers } }, extended)
      }
    }
    return yield* Effect.tryPromise({
      try: async (interrupt) => {
        // Not `AbortSignal.any([interrupt, AbortSignal.timeout(…)])`: on Node 20 a garbage collection can
        // drop that timeout before it fires, and a card whose body stalls then hangs the start-up.
        const controller = new AbortController()
        const onInterrupt = () => controller.abort(interrupt.reason)
        interrupt.addEventListener("abort", onInterrupt, { once: true })
        const timer = setTimeout(
          () => controller.abort(new DOMException("The card was not resolved in time", "TimeoutError")),
          Math.min(cardMillis, clientCall.maxTimerMillis)
        )
        try {
          return await resolve(controller.signal)
        } finally {
          clearTimeout(timer)
          interrupt.removeEventListener("abort", onInterrupt)
        }
      },
      catch: (error) => classifyCard(error, context)
    })
  })

/** The check of `options.trust`, its keys found (a JWKS fetched) now; none without it. */
const checkOf = (
  options: Options,
  base: typeof fetch | undefined
): Effect.Effect<Check | undefined, AgentCardResolutionError.AgentCardResolutionError> => {
  const config = options.trust
  if (config === undefined) return Effect.succeed(undefined)
  return Effect.gen(function*() {
    // The JWKS, when it is one, is read within the card's time limit; without the agent's headers, as it may be another host's.
    const lookupKey = yield* Effect.mapError(
      Effect.timeoutFail(trust.lookup(config, base ?? fetch), {
        duration: cardTimeout(options),
        onTimeout: () => "the trusted JWKS was not read in time"
      }),
      (detail) =>
        new AgentCardResolutionError.AgentCardResolutionError({
          agent: options.name,
          url: options.url,
          reason: "Unreachable",
          detail
        })
    )
    const runtime = yield* Effect.runtime<never>()
    const required = config.required ?? true
    return (raw, normalized) =>
      Runtime.runPromise(runtime)(Effect.either(trust.verify(lookupKey, required, raw, normalized))).then((result) => {
        if (Either.isLeft(result)) throw result.left
        return result.right
      })
  })
}

const resolve = (
  options: Options,
  base: typeof fetch | undefined
): Effect.Effect<RemoteAgent, AgentCardResolutionError.AgentCardResolutionError> =>
  Effect.gen(function*() {
    const computed = computedHeaders(options.headers)
    // Computed once for the card; with each call after it.
    const headers = computed === undefined
      ? clientCall.plainHeaders((options.headers ?? {}) as Headers)
      : yield* Effect.matchCauseEffect(computed, {
        onFailure: () =>
          Effect.fail(
            new AgentCardResolutionError.AgentCardResolutionError({
              agent: options.name,
              url: options.url,
              reason: "InvalidRequest",
              detail: `${headersFailed}, so the card was not requested`
            })
          ),
        // Checked as a static record is, by fetch: the card is read as it is today.
        onSuccess: (computed) => Effect.succeed(clientCall.plainHeaders(computed))
      })
    const resolved = yield* resolveClient(options, base, headers, yield* checkOf(options, base))
    if (resolved.grpcMissing) {
      // Asked for by name, and lost: said once, where the agent is built.
      yield* Effect.logWarning(
        `remote agent ${options.name} prefers gRPC, but ${grpcMissing()}; using ${resolved.binding.transport}`
      ).pipe(
        Effect.annotateLogs({ agent: options.name, url: options.url })
      )
    }
    // A static record goes with every call from the engine; computed headers go with each call's own.
    const staticHeaders = computed === undefined && Object.keys(headers).length > 0 ? headers : undefined
    return makeClient(options, resolved.client, resolved.card, resolved.binding, staticHeaders)
  }).pipe(
    Effect.tapError((error) =>
      Metric.update(clientCall.counter("a2a.card_resolution_error", options.name, { reason: error.reason }), 1)
    ),
    Effect.withSpan("RemoteAgent.resolveCard", { attributes: { "a2a.agent": options.name, "a2a.url": options.url } })
  )

/** How a degraded agent tries its card again by default: after 1 s, doubling, then every 30 s. */
const defaultRecovery = Schedule.exponential("1 second").pipe(Schedule.either(Schedule.spaced("30 seconds")))

/**
 * A degraded agent that becomes the real client once its card resolves. A
 * call while it is unavailable fails as the stub's do, and starts one
 * resolution in the background when the schedule allows one, so no call
 * waits for it and nothing runs between calls.
 */
const recovering = (
  options: Options,
  base: typeof fetch | undefined,
  cause: AgentCardResolutionError.AgentCardResolutionError,
  schedule: Schedule.Schedule<unknown, AgentCardResolutionError.AgentCardResolutionError>
): Effect.Effect<RemoteAgent> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const clock = yield* Effect.clock
    const stub = unavailable(cause)
    let current = stub
    let trying = false
    let state = schedule.initial
    // When the next resolution may start; none once the schedule is done.
    let nextAt: number | undefined
    const plan = (error: AgentCardResolutionError.AgentCardResolutionError) =>
      Effect.map(schedule.step(clock.unsafeCurrentTimeMillis(), error, state), ([next, , decision]) => {
        state = next
        nextAt = ScheduleDecision.isDone(decision) ? undefined : ScheduleIntervals.start(decision.intervals)
      })
    yield* plan(cause)
    const attempt = resolve(options, base).pipe(
      Effect.tap(() => Effect.logInfo(`remote agent ${options.name} is available again`)),
      Effect.matchEffect({
        onSuccess: (client) => Effect.sync(() => (current = client)),
        onFailure: plan
      }),
      Effect.ensuring(Effect.sync(() => (trying = false))),
      Effect.annotateLogs({ agent: options.name, url: options.url })
    )
    const poke = () => {
      if (current !== stub || trying || nextAt === undefined || clock.unsafeCurrentTimeMillis() < nextAt) return
      trying = true
      // Bounded by the card's time limit; it outlives the call that started it, which does not wait for it.
      Runtime.runFork(runtime)(attempt)
    }
    return {
      name: stub.name,
      url: stub.url,
      get card() {
        return current.card
      },
      get transport() {
        return current.transport
      },
      send: (input, callOptions) => Effect.suspend(() => (poke(), current.send(input, callOptions))),
      stream: (input, callOptions) => Stream.suspend(() => (poke(), current.stream(input, callOptions))),
      resubscribe: (taskId, callOptions) => Stream.suspend(() => (poke(), current.resubscribe(taskId, callOptions))),
      getTask: (taskId, callOptions) => Effect.suspend(() => (poke(), current.getTask(taskId, callOptions))),
      cancel: (taskId, callOptions) => Effect.suspend(() => (poke(), current.cancel(taskId, callOptions))),
      awaitOutcome: (taskId, awaitOptions) => Effect.suspend(() => (poke(), current.awaitOutcome(taskId, awaitOptions)))
    }
  })

/**
 * The fetch under the agent's requests: the `HttpClient` in context, when
 * there is one, adapted; otherwise none, and the global fetch is called
 * directly, as it is the fast path.
 */
const baseFetch: Effect.Effect<typeof fetch | undefined> = Effect.flatMap(
  Effect.serviceOption(HttpClient.HttpClient),
  (client) =>
    Option.isNone(client)
      ? Effect.succeed(undefined)
      : Effect.map(Effect.runtime<never>(), (runtime) => httpClientFetch.make(client.value, runtime))
)

/** Resolves the card and builds the client. @internal */
export const make = (options: Options): Effect.Effect<RemoteAgent, AgentCardResolutionError.AgentCardResolutionError> =>
  Effect.flatMap(
    baseFetch,
    (base) =>
      Effect.catchAll(resolve(options, base), (error) =>
        options.onCardFailure === "degrade"
          ? Effect.logWarning(`remote agent ${options.name} is unavailable; starting degraded`).pipe(
            Effect.annotateLogs({ agent: options.name, url: options.url, reason: error.reason, cause: error.message }),
            Effect.zipRight(
              options.recover === false
                ? Effect.succeed(unavailable(error))
                : recovering(options, base, error, options.recover ?? defaultRecovery)
            )
          )
          : Effect.fail(error))
  )
