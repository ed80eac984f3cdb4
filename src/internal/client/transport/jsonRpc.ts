/**
 * JSON-RPC: the SDK's transport over the tracking fetch. Its errors are
 * read by the common rules (`classify.ts`), which began with it.
 *
 * @internal
 */
import { JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import { type Binding, headersOnly } from "../call/classify.js"
import type { TrackingFetch } from "./transport.js"

/** @internal */
export const binding: Binding = { transport: "JSONRPC", parameters: headersOnly }

/** The SDK's JSON-RPC factory over the tracking fetch, v0.3 peers included. @internal */
export const factory = (tracking: TrackingFetch) =>
  new JsonRpcTransportFactory({ fetchImpl: tracking.fetch, legacyCompat: { enabled: true } })
