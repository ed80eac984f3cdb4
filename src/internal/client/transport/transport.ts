/**
 * A `fetch` for the SDK that records, per call, what the wire did (whether
 * the request was handed to the network, the status, `Retry-After`) and caps
 * the size of non-streaming bodies. Calls are told apart by their AbortSignal,
 * which every call of ours owns.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { parseRetryAfter } from "../../wire/retryAfter.js"
import {
  AnswerToAnotherRequest,
  type CallRecord,
  CardContentError,
  RedirectAnswered,
  ResponseTooLarge
} from "../call/classify.js"

export interface TrackingFetch {
  readonly fetch: typeof fetch
}

/**
 * `response` with its body held to `limit` bytes, unless it is the event
 * stream a streaming call asked for (the SDK's reader bounds each event):
 * any other body, whatever its content type says, is read whole.
 */
const limitBody = (response: Response, limit: number, streamAsked: boolean): Response => {
  // The HTTP client holds a body to its declared length, so only bodies without one need counting;
  // a compressed body's length is not the length of what it decodes to.
  const encoding = response.headers.get("content-encoding")
  const length = encoding === null || encoding === "identity" ? response.headers.get("content-length") : null
  const declared = Number(length)
  if (length !== null && declared <= limit) return response
  if (response.body === null) return response
  if (streamAsked && response.ok && response.headers.get("content-type")?.startsWith("text/event-stream")) {
    return response
  }
  if (length !== null && declared > limit) {
    void response.body.cancel().catch(() => undefined)
    throw new ResponseTooLarge(limit)
  }
  let seen = 0
  const limited = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength
        if (seen > limit) controller.error(new ResponseTooLarge(limit))
        else controller.enqueue(chunk)
      }
    })
  )
  return new Response(limited, { status: response.status, statusText: response.statusText, headers: response.headers })
}

/**
 * `over` on top of `base`, with names compared as HTTP compares them,
 * without case: a call's `authorization` replaces the agent's
 * `Authorization` instead of both being sent.
 */
export const mergeHeaders = (
  base: Readonly<Record<string, string>>,
  over: Readonly<Record<string, string>> | undefined
): Record<string, string> => {
  const merged: Record<string, string> = {}
  for (const [name, value] of Object.entries(base)) merged[name.toLowerCase()] = value
  for (const [name, value] of Object.entries(over ?? {})) merged[name.toLowerCase()] = value
  return merged
}

/**
 * The id of a JSON-RPC request as the SDK writes it: the last member of the
 * body. Read from the text, as parsing what is about to be sent would cost
 * every call.
 */
const requestIdOf = (body: unknown): number | undefined => {
  if (typeof body !== "string" || !body.endsWith("}")) return undefined
  const at = body.lastIndexOf(`"id":`)
  if (at < 0) return undefined
  const id = body.slice(at + 5, -1)
  return /^\d+$/.test(id) ? Number(id) : undefined
}

/**
 * Throws when `answer` is a JSON-RPC error for another request. The SDK
 * checks the id of a result, but takes an error as the answer whatever its
 * id says; a null id is a server that could not read the request's.
 */
const checkAnswer = (answer: unknown, id: number): void => {
  if (typeof answer !== "object" || answer === null || !("error" in answer)) return
  const answered = (answer as { id?: unknown }).id
  if (answered !== id && answered !== null) throw new AnswerToAnotherRequest(id, answered)
}

/**
 * `response` with its JSON-RPC error answers checked against the request
 * `id`, on the two ways the SDK reads a body: `json()` for a result, `text()`
 * for an error status or an answer to a stream that is no stream.
 */
const answering = (response: Response, id: number): Response => {
  const text = response.text.bind(response)
  const json = response.json.bind(response)
  response.json = () =>
    json().then((answer: unknown) => {
      checkAnswer(answer, id)
      return answer
    })
  response.text = () =>
    text().then((body) => {
      let answer: unknown
      try {
        answer = JSON.parse(body)
      } catch {
        return body
      }
      checkAnswer(answer, id)
      return body
    })
  return response
}

const recordKey = Symbol("effect-a2a/CallRecord")

interface Tracked extends AbortSignal {
  [recordKey]?: CallRecord
}

/**
 * Registers a call, whatever its transport: its record fills in as the call
 * proceeds, from the tracking fetch or the gRPC interceptor.
 */
export const track = (signal: AbortSignal, record: CallRecord = { sent: false }): CallRecord => {
  // On the signal itself rather than in a WeakMap: weak tables cost every garbage collection.
  ;(signal as Tracked)[recordKey] = record
  return record
}

/**
 * The tracking fetch over `base`: the global fetch when none is given, or
 * an adapted `HttpClient` (see `httpClientFetch`), which answers a redirect
 * as a 3xx response instead of rejecting. With `jsonRpc`, a JSON-RPC error
 * is checked against the request's id; an HTTP+JSON body has none.
 */
export const makeTrackingFetch = (
  maxResponseBytes: number,
  base?: typeof fetch,
  jsonRpc = true
): TrackingFetch => {
  return {
    fetch: (input, init) => {
      const record = (init?.signal as Tracked | null | undefined)?.[recordKey]
      if (record) record.sent = true
      // A redirect is answered, not followed: following it would resend the request elsewhere, and a
      // failure there would read as if this one had never been sent. Mode "error" rather than "manual":
      // with any other mode, fetch copies each request and its body first, in case it must follow.
      // Merged: the SDK's `Content-Type` and `A2A-Version` must replace a call's `content-type` or
      // `a2a-version`, not be sent beside them (fetch would join the two values).
      const merged = mergeHeaders({}, init?.headers as Record<string, string> | undefined)
      const sending = { ...init, redirect: "error" as const, headers: merged }
      return (base === undefined ? fetch(input, sending) : base(input, sending)).then((response) => {
        if (isRedirectStatus(response.status)) {
          if (record) record.status = response.status
          void response.body?.cancel().catch(() => undefined)
          throw new RedirectAnswered()
        }
        if (record) {
          record.status = response.status
          // Only a refusal's Retry-After matters to the caller.
          if (!response.ok) {
            const retryAfter = parseRetryAfter(response.headers.get("retry-after"), Date.now())
            if (retryAfter !== undefined) record.retryAfter = retryAfter
          }
        }
        const limited = limitBody(response, maxResponseBytes, merged.accept === "text/event-stream")
        // An event stream's events are each checked by the SDK.
        const id = !jsonRpc || limited.headers.get("content-type")?.startsWith("text/event-stream")
          ? undefined
          : requestIdOf(init?.body)
        return id === undefined ? limited : answering(limited, id)
      }, (error: unknown) => {
        throw isRedirect(error) ? new RedirectAnswered() : error
      })
    }
  }
}

// A client that does not follow redirects hands them over as answers; fetch in mode "error" never does.
const isRedirectStatus = (status: number): boolean => status >= 300 && status < 400

// How fetch rejects a redirect in mode "error".
const isRedirect = (error: unknown): boolean =>
  error instanceof TypeError && error.cause instanceof Error && error.cause.message === "unexpected redirect"

const AgentInterface = Schema.Struct({
  url: Schema.String,
  protocolBinding: Schema.String,
  protocolVersion: Schema.optionalWith(Schema.String, { exact: true })
})

/** The least a card must hold to be used: v1.0 or v0.3 shape. */
const RawCard = Schema.Union(
  Schema.Struct({ name: Schema.String, supportedInterfaces: Schema.Array(AgentInterface) }),
  Schema.Struct({
    name: Schema.String,
    url: Schema.String,
    protocolVersion: Schema.optionalWith(Schema.String, { exact: true }),
    preferredTransport: Schema.optionalWith(Schema.String, { exact: true }),
    additionalInterfaces: Schema.optionalWith(
      Schema.Array(Schema.Struct({ url: Schema.String, transport: Schema.String })),
      { exact: true }
    )
  })
)

const decodeCard = Schema.decodeUnknownEither(RawCard, { errors: "first" })

/**
 * A fetch for the SDK's card resolver that bounds the wait and the size and
 * checks the card's shape before the SDK normalizes it (which would silently
 * coerce wrong types).
 */
export const cardFetch = (
  record: CallRecord,
  signal: AbortSignal,
  maxBytes: number,
  headers: Readonly<Record<string, string>>,
  base: typeof fetch = fetch
): typeof fetch =>
async (input, init) => {
  record.sent = true
  const response = limitBody(
    await base(input, {
      ...init,
      headers: mergeHeaders(headers, init?.headers as Record<string, string> | undefined),
      signal
    }),
    maxBytes,
    false
  )
  record.status = response.status
  if (!response.ok) return response
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new CardContentError("InvalidJson", `the card is not JSON (${(error as Error).message.slice(0, 120)})`)
  }
  const decoded = decodeCard(json)
  if (decoded._tag === "Left") {
    throw new CardContentError("InvalidCard", decoded.left.message.replace(/\s+/g, " ").slice(0, 300))
  }
  return new Response(text, { status: response.status, headers: response.headers })
}
