/**
 * Spans made and ended by hand, for the paths that run on every request, and
 * whether spans go anywhere.
 *
 * @internal
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Chunk from "effect/Chunk"
import type * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

let defaultTracer: Tracer.Tracer | undefined

/** The name of the span of a server's run of an agent. */
export const executeSpanName = "A2AServer.execute"

/** The name of the span of a push delivery, its retries included. */
export const pushSpanName = "A2AServer.push"

/**
 * Whether `tracer` is one the application provided (e.g. `@effect/opentelemetry`)
 * rather than Effect's default, whose spans are never exported.
 *
 * @internal
 */
export const exportsSpans = (tracer: Tracer.Tracer): boolean =>
  tracer !== (defaultTracer ??= Effect.runSync(Effect.tracer))

/**
 * What a span made by `Effect.makeSpan` takes from a fiber: its tracer and
 * clock, and the tracer settings in its refs.
 *
 * @internal
 */
export interface SpanSettings {
  readonly tracer: Tracer.Tracer
  readonly clock: Clock.Clock
  readonly enabled: boolean
  readonly timing: boolean
  readonly annotations: HashMap.HashMap<string, unknown>
  readonly links: Chunk.Chunk<Tracer.SpanLink>
}

/**
 * Reads the settings through `get`: a runtime's `FiberRefs`, or a running
 * fiber's `getFiberRef` (its `getFiberRefs` would copy them).
 *
 * @internal
 */
export const spanSettings = (
  get: <A>(ref: FiberRef.FiberRef<A>) => A,
  tracer: Tracer.Tracer,
  clock: Clock.Clock
): SpanSettings => ({
  tracer,
  clock,
  enabled: get(FiberRef.currentTracerEnabled),
  timing: get(FiberRef.currentTracerTimingEnabled),
  annotations: get(FiberRef.currentTracerSpanAnnotations),
  links: get(FiberRef.currentTracerSpanLinks)
})

/**
 * The parent a new span takes from `span`, skipping spans that opted out of
 * propagation, as `Effect.makeSpan` does.
 *
 * @internal
 */
export const propagatedParent = (span: Tracer.AnySpan | undefined): Option.Option<Tracer.AnySpan> => {
  let current = span
  while (current !== undefined && Context.get(current.context, Tracer.DisablePropagation)) {
    current = current._tag === "Span" ? Option.getOrUndefined(current.parent) : undefined
  }
  return Option.fromNullable(current)
}

/**
 * Starts a span the way `Effect.makeSpan` would for the same settings, or
 * none when tracing is off. Whoever starts it must end it with `endSpan` on
 * every path, interruption included.
 *
 * @internal
 */
export const startSpan = (
  settings: SpanSettings,
  name: string,
  parent: Option.Option<Tracer.AnySpan>,
  kind: Tracer.SpanKind,
  attributes: Readonly<Record<string, unknown>>
): Tracer.Span | undefined => {
  if (!settings.enabled) return undefined
  const span = settings.tracer.span(
    name,
    parent,
    Context.empty(),
    Chunk.toReadonlyArray(settings.links),
    settings.timing ? settings.clock.unsafeCurrentTimeNanos() : 0n,
    kind,
    { captureStackTrace: false }
  )
  HashMap.forEach(settings.annotations, (value, key) => span.attribute(key, value))
  for (const key in attributes) span.attribute(key, attributes[key])
  return span
}

/** Ends `span` once, at the clock's time unless timing is off. @internal */
export const endSpan = (settings: SpanSettings, span: Tracer.Span, exit: Exit.Exit<unknown, unknown>): void => {
  if (span.status._tag === "Ended") return
  span.end(settings.timing ? settings.clock.unsafeCurrentTimeNanos() : 0n, exit)
}

/** What a hop needs of a span: its ids for `traceparent` and log annotations. @internal */
export interface SpanIds {
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
}

/** The W3C `traceparent` header of `span`. @internal */
export const traceparent = (span: SpanIds): string => `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

const pool = Buffer.allocUnsafe(24 * 512)
let used = pool.length
const zeroTrace = "0".repeat(32)
const zeroSpan = "0".repeat(16)

/**
 * 48 random hex digits, a trace id's 32 then a span id's 16, neither all
 * zero (W3C forbids it). Cut from a pool filled 512 ids at a time: one
 * native call per id instead of one per digit.
 */
const randomIds = (): string => {
  if (used === pool.length) {
    crypto.getRandomValues(pool)
    used = 0
  }
  const hex = pool.toString("hex", used, used + 24)
  used += 24
  return hex.startsWith(zeroTrace) || hex.endsWith(zeroSpan) ? randomIds() : hex
}

/**
 * Ids for a span under `parent` that no tracer would export: Effect's
 * default tracer keeps a span for the code that runs in it, and none runs in
 * a client call, so only its ids are made.
 *
 * @internal
 */
export const childIds = (parent: Option.Option<Tracer.AnySpan>): SpanIds => {
  const ids = randomIds()
  return parent._tag === "Some"
    ? { traceId: parent.value.traceId, spanId: ids.slice(32), sampled: parent.value.sampled }
    : { traceId: ids.slice(0, 32), spanId: ids.slice(32), sampled: true }
}

const noAttributes: ReadonlyMap<string, unknown> = new Map()

/**
 * A span that Effect's default tracer would make and export nowhere, known
 * only by its ids: code that runs in it (the agent's own spans, its log
 * lines) still joins its trace, without the default span's per-digit random
 * ids and attribute map. Its attributes and events are not kept: nothing
 * exports them.
 *
 * @internal
 */
export class UnexportedSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
  readonly context = Context.empty()
  readonly attributes = noAttributes
  readonly links: ReadonlyArray<Tracer.SpanLink> = []
  status: Tracer.SpanStatus = { _tag: "Started", startTime: 0n }
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly kind: Tracer.SpanKind
  ) {
    const ids = childIds(parent)
    this.traceId = ids.traceId
    this.spanId = ids.spanId
    this.sampled = ids.sampled
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: 0n, endTime, exit }
  }
  attribute(): void {}
  event(): void {}
  addLinks(): void {}
}

/**
 * The caller's span named by the request's trace headers (W3C `traceparent`,
 * then B3). Node and the SDK's transports give header names in lower case and
 * values as strings: such headers are read in place, any others through
 * `Headers.fromInput`.
 *
 * @internal
 */
export const parentOfHeaders = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): Option.Option<Tracer.ExternalSpan> => {
  for (const key in headers) {
    if (typeof headers[key] !== "string" || key !== key.toLowerCase()) {
      return validFromHeaders(Headers.fromInput(headers))
    }
  }
  return validFromHeaders(headers as Headers.Headers)
}

// `HttpTraceContext.fromHeaders`'s order (W3C, then B3, then X-B3), each taken only when its ids are valid.
const decoders = [HttpTraceContext.w3c, HttpTraceContext.b3, HttpTraceContext.xb3]
const validFromHeaders = (headers: Headers.Headers): Option.Option<Tracer.ExternalSpan> => {
  for (const decode of decoders) {
    const parent = Option.flatMap(decode(headers), validParent)
    if (Option.isSome(parent)) return parent
  }
  return Option.none()
}

const lowerHex = /^[0-9a-f]+$/
const validId = (id: string, length: number): boolean => id.length === length && lowerHex.test(id) && !/^0+$/.test(id)

/**
 * The parent when its ids are valid, as W3C Trace Context requires of a
 * caller to join (lower-case hex, not all zeros; a 64-bit B3 trace id is
 * padded to 128 bits); otherwise none, and the run starts its own trace.
 * Taken as it came, an all-zero `traceparent` would put every such caller
 * in one trace, and a garbage one would travel on in nested calls.
 *
 * @internal
 */
export const validParent = (span: Tracer.ExternalSpan): Option.Option<Tracer.ExternalSpan> => {
  const traceId = span.traceId.length === 16 ? span.traceId.padStart(32, "0") : span.traceId
  if (!validId(traceId, 32) || !validId(span.spanId, 16)) return Option.none()
  return Option.some(traceId === span.traceId ? span : Tracer.externalSpan({ ...span, traceId }))
}
