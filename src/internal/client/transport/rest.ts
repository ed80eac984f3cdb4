/**
 * HTTP+JSON: the SDK's REST transport over the tracking fetch, and how its
 * errors read. The SDK keeps an error answer's status code and headers, and
 * reads an A2A error from the `google.rpc.Status` body's `ErrorInfo`.
 *
 * @internal
 */
import { RestTransportFactory } from "@a2a-js/sdk/client"
import {
  a2aErrorFields,
  type Binding,
  type CallContext,
  type Facts,
  type Fields,
  headersOnly,
  isClientError,
  prop
} from "../call/classify.js"
import type { TrackingFetch } from "./transport.js"

/** The SDK's error for an answer with an error status and no A2A error: its generic class, with the status it kept. */
const statusOf = (facts: Facts): number | undefined => {
  for (const error of facts.chain) {
    const status = prop(error, "statusCode")
    // An HTTP status is an integer of three digits; anything else is no status this client can report.
    if (
      prop(error, "transport") === "rest" && Number.isInteger(status) && (status as number) >= 100 &&
      (status as number) <= 599
    ) {
      return status as number
    }
  }
  return undefined
}

/**
 * An A2A error decides by the JSON-RPC table, whatever the status (a 5xx
 * whose body is the server's own A2A error included); any other error
 * status is `HttpStatus`, refused when 4xx, as on JSON-RPC. A stream's
 * error event after events is never a refusal. The rest (a body that is no
 * JSON, a cut connection) is read as on JSON-RPC, from the same fetch.
 */
const classify = (facts: Facts, ctx: CallContext): Fields | undefined => {
  // A v0.3 peer's error body is read by the SDK into a plain A2A class, known from its status alone.
  const a2a = a2aErrorFields(facts, ctx, (ctx.record?.status ?? 0) >= 400)
  if (a2a !== undefined) return a2a
  const status = statusOf(facts)
  if (status === undefined) return undefined
  return { reason: "HttpStatus", delivery: !ctx.streamStarted && isClientError(status) ? "Refused" : "Unknown", status }
}

/** @internal */
export const binding: Binding = {
  transport: "HTTP+JSON",
  parameters: headersOnly,
  classify
}

/** The SDK's HTTP+JSON factory over the tracking fetch, v0.3 peers included. @internal */
export const factory = (tracking: TrackingFetch) =>
  new RestTransportFactory({ fetchImpl: tracking.fetch, legacyCompat: { enabled: true } })
