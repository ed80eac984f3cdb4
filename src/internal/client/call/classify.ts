/**
 * Turns whatever `@a2a-js/sdk` (or `fetch` below it) threw into a typed
 * error. Must never throw: any value can arrive here.
 *
 * @internal
 */
import { A2AError } from "@a2a-js/sdk/errors"
import type * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as A2AClientError from "../../../A2AClientError.js"
import * as AgentCardResolutionError from "../../../AgentCardResolutionError.js"
import * as ErrorTable from "../../wire/errorTable.js"
import type { Transport } from "../../wire/transport.js"

/**
 * What the transport observed of one call; filled in by the tracking fetch
 * (JSON-RPC, HTTP+JSON) or by the gRPC interceptor.
 */
export interface CallRecord {
  /** Handed to the network: to fetch, or past the interceptor to grpc-js. */
  sent: boolean
  status?: number
  retryAfter?: Duration.Duration
  /** gRPC: the status carried details that could not be decoded; the interceptor dropped them. */
  undecodableDetails?: boolean
  /** gRPC: the server began its answer (its response headers came), so it took the request. */
  answered?: boolean
  /** gRPC: the request in flight, to cancel; set by the interceptor as each request starts, cleared as it ends. */
  inFlight?: { readonly cancel: () => void } | undefined
  /** The operation was given up (its time, an interruption): a request that starts after it is cancelled at once. */
  cancelled?: boolean
}

/**
 * What grpc-js throws for a header it cannot carry as metadata, before
 * anything is sent: a value outside printable ASCII (which HTTP takes), a
 * `-bin` name. Its text holds the value, which may be a secret: never told.
 */
export const unsendableMetadata = /^Metadata key|^Metadata string value|^keys that (don't )?end with '-bin'/

/** What is told instead of grpc-js's text for a header it cannot carry. */
export const unsendableMetadataDetail =
  "a header cannot be sent as gRPC metadata: a name outside [0-9a-z_.-], a name ending in -bin, or a value outside printable ASCII"

/**
 * What differs between the transports once the client is built: how a
 * request's headers become the SDK's service parameters, and how what the
 * transport throws is read before the common rules.
 *
 * @internal
 */
export interface Binding {
  readonly transport: Transport
  /** The service parameters of one request of `record`: its headers, and for gRPC the mark its interceptor reads. */
  readonly parameters: (record: CallRecord, headers: Record<string, string>) => Record<string, string>
  /** Forgets what `parameters` registered, once its request has settled: a request the SDK never made leaves nothing. */
  readonly release?: ((parameters: Record<string, string>) => void) | undefined
  /**
   * The transport cancels its requests through their record (gRPC's interceptor) rather than by a signal handed
   * to the SDK: the call then makes no `AbortController`, the costliest piece of its set-up.
   */
  readonly cancelsByRecord?: boolean | undefined
  /** This transport's own reading of a failure; `undefined` leaves it to the common rules. */
  readonly classify?: ((facts: Facts, ctx: CallContext) => Fields | undefined) | undefined
}

/** Raised by the tracking fetch when a body exceeds the configured limit. */
export class ResponseTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`response body exceeds ${limit} bytes`)
    this.name = "ResponseTooLarge"
  }
}

/**
 * Raised by the tracking fetch when the agent answered with a redirect: it
 * is not followed, and fetch keeps neither its status nor its target.
 */
export class RedirectAnswered extends Error {
  constructor() {
    super("the agent answered with a redirect (HTTP 3xx), which is not followed: configure the agent's final URL")
    this.name = "RedirectAnswered"
  }
}

/**
 * Raised by the tracking fetch when a JSON-RPC error answers another request
 * than the one sent: it says nothing of this one.
 */
export class AnswerToAnotherRequest extends Error {
  constructor(sent: number, answered: unknown) {
    super(`the JSON-RPC error answers request ${JSON.stringify(answered) ?? "(no id)"}, not request ${sent}`)
    this.name = "AnswerToAnotherRequest"
  }
}

/**
 * Raised by the fetch over an `HttpClient` when the client could not build
 * the request (an unreadable URL, a body it could not encode): it provably
 * never left.
 */
export class RequestNotSent extends Error {
  constructor(detail: string, cause: unknown) {
    super(`the HTTP client could not send the request: ${detail}`, { cause })
    this.name = "RequestNotSent"
  }
}

/** Raised while resolving a card whose content is not an agent card. */
export class CardContentError extends Error {
  constructor(
    readonly reason: "InvalidJson" | "InvalidCard" | "InvalidSignature" | "UntrustedSigner" | "Unsigned",
    detail: string
  ) {
    super(detail)
    this.name = "CardContentError"
  }
}

const notSentCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"])
const lostCodes = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE", "UND_ERR_CLOSED", "ECONNABORTED"])
const readTimeoutCodes = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "ETIMEDOUT"])
const invalidResponseMessages = [
  "Invalid JSON-RPC response",
  "ID mismatch",
  "missing payload",
  "missing 'result'",
  "Failed to parse SSE",
  "Invalid response",
  "Invalid SSE event",
  "empty SSE event",
  "SSE response body is undefined",
  "Invalid SendMessageResponse"
]

/**
 * The JSON-RPC codes of an answer that says the server did not act on the
 * request: every A2A code but -32603 `InternalError` (it may have failed
 * midway) and -32006 `InvalidAgentResponse` (the agent ran).
 */
const refusedCodes: ReadonlySet<number> = new Set(
  Object.keys(A2AClientError.protocolErrorNames).map(Number).filter((code) => code !== -32603 && code !== -32006)
)

/**
 * An error the SDK built from a JSON-RPC error body: one of its classes for a
 * known code, or its generic one for another code, which counts only when
 * the body was JSON-RPC (a proxy's or a gateway's `{"error": …}` is not).
 */
const isJsonRpcError = (error: unknown): boolean => {
  if (typeof prop(error, "envelopeCode") !== "number") return false
  const envelope = prop(error, "errorResponse")
  return envelope === undefined || prop(envelope, "jsonrpc") === "2.0"
}

/** Without a JSON-RPC error, a 4xx is the server's own refusal. */
export const isClientError = (status: number | undefined): status is number =>
  status !== undefined && status >= 400 && status < 500

const maxDetail = 300

/** Reads a property without trusting the value: getters may throw. */
export const prop = (value: unknown, key: string): unknown => {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return undefined
  try {
    return (value as Record<string, unknown>)[key]
  } catch {
    return undefined
  }
}

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

/** The error and its causes, outermost first, bounded against cycles. */
const chainOf = (error: unknown): ReadonlyArray<unknown> => {
  const chain: Array<unknown> = []
  let current: unknown = error
  while (current !== undefined && current !== null && chain.length < 8 && !chain.includes(current)) {
    chain.push(current)
    current = prop(current, "cause")
  }
  return chain
}

const describe = (error: unknown): string => {
  let text: string
  try {
    const message = str(prop(error, "message"))
    const name = str(prop(error, "name"))
    text = message !== undefined ? (name && name !== "Error" ? `${name}: ${message}` : message) : String(error)
  } catch {
    text = Object.prototype.toString.call(error)
  }
  return text.length > maxDetail ? `${text.slice(0, maxDetail)}…` : text
}

/** What a thrown value says, gathered once. @internal */
export interface Facts {
  readonly chain: ReadonlyArray<unknown>
  readonly names: ReadonlyArray<string>
  readonly codes: ReadonlyArray<string>
  readonly messages: ReadonlyArray<string>
}

const factsOf = (error: unknown): Facts => {
  const chain = chainOf(error)
  const pick = (key: string) => chain.flatMap((e) => Option.toArray(Option.fromNullable(str(prop(e, key)))))
  return { chain, names: pick("name"), codes: pick("code"), messages: pick("message") }
}

const statusFromText = (messages: ReadonlyArray<string>): number | undefined => {
  for (const message of messages) {
    const match = /Status: (\d{3})\b/.exec(message) ?? /stream for \w+: (\d{3})\b/.exec(message)
    if (match) return Number(match[1])
  }
  return undefined
}

/** Context of one call, for classification. */
export interface CallContext {
  readonly agent: string
  /** The agent's transport; none for errors of a client not built yet. */
  readonly binding?: Binding | undefined
  /** The call's own signal: whether it fired, and why, tells our cancel from the peer's. */
  readonly signal?: Pick<AbortSignal, "aborted" | "reason"> | undefined
  readonly operation: A2AClientError.Operation
  readonly record: CallRecord | undefined
  readonly streamStarted: boolean
  readonly taskId?: string | undefined
  readonly contextId?: string | undefined
}

/** @internal */
export type Fields = Pick<A2AClientError.A2AClientError, "reason" | "delivery"> & {
  status?: number
  code?: number
  grpcStatus?: string
  /** In place of the thrown value's own text, when that may hold what must not be logged. */
  detail?: string
}

/** Service parameters that are the request's headers and nothing else, as on HTTP. @internal */
export const headersOnly: Binding["parameters"] = (_record, headers) => headers

/**
 * An A2A error the SDK read from the answer: from an `ErrorInfo` (HTTP+JSON's
 * body, gRPC's status details), its class named after the error where the
 * generic one is `A2AError`; from a v0.3 HTTP+JSON error body, one of its
 * plain classes, which carry no transport. A plain one counts only as the
 * answer to an error status (`answered`): the SDK also throws them itself,
 * for an event it cannot translate.
 */
const isA2AError = (answered: boolean) => (error: unknown): error is A2AError => {
  if (!(error instanceof A2AError) || prop(error, "name") === "A2AError") return false
  const transport = prop(error, "transport")
  return transport === undefined ? answered : typeof transport === "string" && transport !== "jsonrpc"
}

/**
 * An A2A error carried by HTTP+JSON or gRPC, as JSON-RPC would have carried
 * it: the error table's code for its reason, decided by the same table
 * whatever status carried it (a 1.0.0 peer's 415 or UNIMPLEMENTED
 * included); never a refusal inside a stream that had events.
 *
 * @internal
 */
export const a2aErrorFields = (facts: Facts, ctx: CallContext, answered = false): Fields | undefined => {
  const error = facts.chain.find(isA2AError(answered))
  if (error === undefined) return undefined
  const code = (ErrorTable.ofReason(error.reason) ?? ErrorTable.rows.InternalError).jsonRpc
  return {
    reason: "ProtocolError",
    delivery: !ctx.streamStarted && refusedCodes.has(code) ? "Refused" : "Unknown",
    code
  }
}

const classifyFacts = (facts: Facts, ctx: CallContext): Fields => {
  const specific = ctx.binding?.classify?.(facts, ctx)
  if (specific !== undefined) return specific
  const sentDelivery: A2AClientError.Delivery = ctx.record?.sent === false ? "NotSent" : "Unknown"
  const has = (predicate: (message: string) => boolean) => facts.messages.some(predicate)
  if (facts.names.includes("ResponseTooLarge")) return { reason: "InvalidResponse", delivery: "Unknown" }
  if (facts.names[0] === "RequestNotSent") return { reason: "InvalidRequest", delivery: "NotSent" }
  if (facts.names.includes("RedirectAnswered")) return { reason: "HttpStatus", delivery: "Unknown" }
  if (facts.names.includes("AnswerToAnotherRequest")) {
    // Not an answer to this request: only the status, when it is an error's, speaks for it.
    const status = ctx.record?.status
    return status === undefined || status < 300
      ? { reason: "InvalidResponse", delivery: "Unknown" }
      : { reason: "HttpStatus", delivery: isClientError(status) ? "Refused" : "Unknown", status }
  }
  const rpc = facts.chain.find(isJsonRpcError)
  if (rpc !== undefined) {
    const code = prop(rpc, "envelopeCode") as number
    // JSON-RPC codes are integers: an error with another number is not an answer this client can read.
    if (!Number.isSafeInteger(code)) return { reason: "InvalidResponse", delivery: "Unknown" }
    // The code decides, whatever the HTTP status; but not an error carried in a stream's event, as the
    // server may have started the run before it (inside a stream that had events, the task exists), nor
    // the SDK server's complaint about the order of the events an agent published, which means it ran.
    const afterRun = ctx.streamStarted || has((m) => m.startsWith("SSE event contained an error")) ||
      has((m) => m.includes("before initial 'Message'/'Task' event") || m.startsWith("Stream ordering violation"))
    return { reason: "ProtocolError", delivery: !afterRun && refusedCodes.has(code) ? "Refused" : "Unknown", code }
  }
  // A 4xx whose body is not a JSON-RPC error (a gateway's `{"error": …}`, or nothing the SDK can read), before a
  // stream began: the server refused the request, whatever it said.
  const status = ctx.record?.status
  if (!ctx.streamStarted && isClientError(status)) return { reason: "HttpStatus", delivery: "Refused", status }
  if (facts.names.includes("InvalidAgentResponseError")) return { reason: "InvalidResponse", delivery: "Unknown" }
  if (facts.names.includes("TimeoutError")) return { reason: "Timeout", delivery: sentDelivery }
  if (facts.names.includes("AbortError")) return { reason: "Aborted", delivery: sentDelivery }
  if (facts.codes.some((c) => notSentCodes.has(c))) return { reason: "ConnectionRefused", delivery: "NotSent" }
  if (facts.codes.includes("UND_ERR_CONNECT_TIMEOUT")) return { reason: "Timeout", delivery: "NotSent" }
  if (facts.codes.some((c) => readTimeoutCodes.has(c))) return { reason: "Timeout", delivery: "Unknown" }
  if (facts.codes.some((c) => lostCodes.has(c)) || has((m) => m === "terminated" || m === "other side closed")) {
    return { reason: ctx.streamStarted ? "StreamInterrupted" : "ConnectionLost", delivery: "Unknown" }
  }
  if (has((m) => m.startsWith("HTTP error"))) {
    // A 5xx may be a proxy's, after the server got the request.
    const status = ctx.record?.status ?? statusFromText(facts.messages)
    return {
      reason: "HttpStatus",
      delivery: isClientError(status) ? "Refused" : "Unknown",
      ...(status === undefined ? {} : { status })
    }
  }
  if (facts.names.includes("SyntaxError") || has((m) => invalidResponseMessages.some((p) => m.includes(p)))) {
    return { reason: "InvalidResponse", delivery: "Unknown" }
  }
  // A TypeError other than fetch's own, or the SDK refusing an event it translates from v0.3, is the SDK
  // failing to read what came: a bad event, not a cut stream.
  const unreadable = (facts.names[0] === "TypeError" && !has((m) => m === "fetch failed")) ||
    facts.names.includes("RequestMalformedError")
  if (ctx.streamStarted && unreadable) {
    return { reason: "InvalidResponse", delivery: "Unknown" }
  }
  if (ctx.streamStarted) return { reason: "StreamInterrupted", delivery: "Unknown" }
  return { reason: "InvalidResponse", delivery: sentDelivery }
}

/**
 * Classifies any thrown value of a call. Total: it never throws.
 */
export const classifyCall = (error: unknown, ctx: CallContext): A2AClientError.A2AClientError => {
  let fields: Fields
  let detail: string
  try {
    const facts = factsOf(error)
    fields = classifyFacts(facts, ctx)
    detail = fields.detail ?? describe(error)
  } catch {
    fields = { reason: "InvalidResponse", delivery: "Unknown" }
    detail = "unrecognised failure"
  }
  const status = fields.status ??
    (ctx.record?.status !== undefined && ctx.record.status !== 200 ? ctx.record.status : undefined)
  return new A2AClientError.A2AClientError({
    agent: ctx.agent,
    operation: ctx.operation,
    reason: fields.reason,
    delivery: fields.delivery,
    detail,
    ...(ctx.binding === undefined ? {} : { transport: ctx.binding.transport }),
    ...(status === undefined ? {} : { status }),
    ...(fields.grpcStatus === undefined ? {} : { grpcStatus: fields.grpcStatus }),
    ...(fields.code === undefined
      ? {}
      : { code: fields.code, protocolError: A2AClientError.protocolErrorName(fields.code) }),
    ...(ctx.record?.retryAfter === undefined ? {} : { retryAfter: ctx.record.retryAfter }),
    ...(ctx.taskId ? { taskId: ctx.taskId } : {}),
    ...(ctx.contextId ? { contextId: ctx.contextId } : {})
  })
}

const unreachable = (facts: Facts): boolean =>
  facts.names.includes("TimeoutError") || facts.names.includes("AbortError") ||
  facts.codes.some((code) => notSentCodes.has(code) || lostCodes.has(code))

/**
 * Classifies any thrown value of a card resolution. Total: it never throws.
 */
export const classifyCard = (
  error: unknown,
  ctx: { readonly agent: string; readonly url: string; readonly record: CallRecord }
): AgentCardResolutionError.AgentCardResolutionError => {
  let reason: AgentCardResolutionError.Reason
  let detail: string
  try {
    const facts = factsOf(error)
    const content = facts.chain.find((e) => e instanceof CardContentError)
    detail = describe(error)
    // The extended card over gRPC, with a header metadata cannot carry: nothing was asked, and the text holds the value.
    if (facts.messages.some((m) => unsendableMetadata.test(m))) {
      reason = "InvalidRequest"
      detail = unsendableMetadataDetail
    } else if (content instanceof CardContentError) reason = content.reason
    else if (facts.messages.some((m) => m.startsWith("No compatible transport"))) reason = "NoCompatibleTransport"
    else if (facts.messages.some((m) => m.startsWith("Failed to fetch Agent Card"))) reason = "HttpStatus"
    else if (facts.names.includes("SyntaxError")) reason = "InvalidJson"
    else if (facts.names.includes("ResponseTooLarge")) reason = "InvalidCard"
    // Also after a status: a body that stalls past the time limit, or an extended card's endpoint that is down.
    else if (ctx.record.status === undefined || unreachable(facts)) reason = "Unreachable"
    else reason = "InvalidCard"
  } catch {
    reason = "InvalidCard"
    detail = "unrecognised failure"
  }
  const status = ctx.record.status
  return new AgentCardResolutionError.AgentCardResolutionError({
    agent: ctx.agent,
    url: ctx.url,
    reason,
    detail,
    ...(status === undefined || status === 200 ? {} : { status })
  })
}
