/**
 * gRPC: the SDK's gRPC transport, loaded only when a card offers it or the
 * user prefers it (`@grpc/grpc-js` and `@bufbuild/protobuf` are optional
 * peers), with a client interceptor that records what the wire did, and
 * how its errors read.
 *
 * gRPC takes no fetch: the tracking fetch and the user's `HttpClient` do not
 * apply. What the tracking fetch records for HTTP, the interceptor records
 * here. grpc-js takes interceptors only in the call options, which the SDK
 * fixes per factory, so the interceptor finds the call it serves by a
 * metadata entry the call's service parameters carry (its id in a table of
 * the agent's calls in flight), and removes that entry before anything is
 * sent. A metadata entry rather than an `AsyncLocalStorage`: a stream's
 * request starts in whatever context first pulls it, while its service
 * parameters are fixed where the call is made. The interceptor also cancels
 * a call given up, through its record, as the SDK would on a signal: the
 * call then makes no `AbortController`.
 *
 * @internal
 */
import type { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc"
import type * as GrpcErrors from "@a2a-js/sdk/errors/grpc"
import type * as Wire from "@bufbuild/protobuf/wire"
import type * as GrpcJs from "@grpc/grpc-js"
import * as Duration from "effect/Duration"
import * as Peer from "../../peer.js"
import { parseRetryAfter } from "../../wire/retryAfter.js"
import {
  a2aErrorFields,
  type Binding,
  type CallContext,
  type CallRecord,
  type Facts,
  type Fields,
  prop,
  unsendableMetadata,
  unsendableMetadataDetail
} from "../call/classify.js"

/** The packages gRPC needs, loaded once on first use. */
interface Modules {
  readonly grpc: typeof GrpcJs
  readonly factory: typeof GrpcTransportFactory
  readonly errors: typeof GrpcErrors
  readonly wire: typeof Wire
}

let loading: Promise<Modules> | undefined

/** What to install for gRPC, named in the error of a client that cannot load it. @internal */
export const missing = (): string => Peer.installHint(Peer.grpcPackages, "the GRPC transport")

/** The gRPC modules; rejects when they are not installed. */
const load = (): Promise<Modules> =>
  loading ??= Promise.all([
    import("@grpc/grpc-js"),
    import("@a2a-js/sdk/client/grpc"),
    import("@a2a-js/sdk/errors/grpc"),
    import("@bufbuild/protobuf/wire")
  ]).then(
    ([grpc, client, errors, wire]) => ({ grpc, factory: client.GrpcTransportFactory, errors, wire }),
    (error: unknown) => {
      loading = undefined
      throw error
    }
  )

/** What grpc-js's `cancel()`, the SDK's way to give up a call, reports. */
const cancelledOnClient = "Cancelled on client"

/** The metadata entry that names a call to the interceptor; never sent. */
const callKey = "effect-a2a-call"

const retryInfoType = "type.googleapis.com/google.rpc.RetryInfo"
const errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

/** `google.rpc.RetryInfo`'s `retry_delay` (a `google.protobuf.Duration`), which the SDK does not decode. */
const retryDelay = (wire: typeof Wire, bytes: Uint8Array): Duration.Duration | undefined => {
  const reader = new wire.BinaryReader(bytes)
  while (reader.pos < reader.len) {
    const [field, type] = reader.tag()
    if (field !== 1 || type !== wire.WireType.LengthDelimited) {
      reader.skip(type)
      continue
    }
    const duration = new wire.BinaryReader(reader.bytes())
    let seconds = 0
    let nanos = 0
    while (duration.pos < duration.len) {
      const [f, t] = duration.tag()
      if (f === 1 && t === wire.WireType.Varint) seconds = Number(duration.int64())
      else if (f === 2 && t === wire.WireType.Varint) nanos = duration.int32()
      else duration.skip(t)
    }
    const millis = seconds * 1000 + nanos / 1e6
    return Number.isFinite(millis) && millis >= 0 ? Duration.millis(millis) : undefined
  }
  return undefined
}

/**
 * Reads a status's details as the SDK will (the status, then each
 * `ErrorInfo`), and its `RetryInfo`. Throws when they cannot be decoded: the
 * SDK decodes them inside grpc-js's callback without a try, and its unary
 * call would then never settle.
 */
const readDetails = (modules: Modules, raw: GrpcJs.MetadataValue): Duration.Duration | undefined => {
  const buffer = Buffer.isBuffer(raw) ? raw : Buffer.from(raw, "binary")
  let delay: Duration.Duration | undefined
  for (const detail of modules.errors.decodeStatus(buffer).details) {
    if (detail.typeUrl === errorInfoType) modules.errors.decodeErrorInfo(Buffer.from(detail.value))
    else if (detail.typeUrl === retryInfoType) delay = retryDelay(modules.wire, detail.value)
  }
  return delay
}

/** A call as grpc-js hands it to an interceptor, and as the interceptor hands it back. */
type NextCall = ReturnType<GrpcJs.NextCall>

/** What one agent's calls share: the gRPC modules, the table of calls in flight, the reading of a status. */
interface Shared {
  readonly grpc: typeof GrpcJs
  readonly calls: Map<string, CallRecord>
  readonly onStatus: (record: CallRecord | undefined, status: GrpcJs.StatusObject) => void
}

/**
 * One call, seen by the interceptor: marks it sent once its message is
 * handed to grpc-js, answered when its response headers come, reads the
 * status it ends with, and cancels it when its operation is given up.
 * Written to grpc-js's call interface rather than as an `InterceptingCall`,
 * which makes a requester, three bound listeners and a listener wrapper per
 * call so that an interceptor may act later; this one acts at once, and is
 * its own listener.
 */
class Watched implements NextCall, GrpcJs.InterceptingListener {
  private record: CallRecord | undefined
  private listener: Partial<GrpcJs.InterceptingListener> | undefined
  constructor(private readonly next: NextCall, private readonly shared: Shared) {}
  start(metadata: GrpcJs.Metadata, listener?: Partial<GrpcJs.InterceptingListener>): void {
    const id = metadata.get(callKey)[0]
    metadata.remove(callKey)
    let record: CallRecord | undefined
    if (typeof id === "string") {
      record = this.shared.calls.get(id)
      this.shared.calls.delete(id)
    }
    this.record = record
    this.listener = listener
    this.next.start(metadata, this)
    // The call is given up through its record (the SDK gets no signal), as the SDK's own cancel would.
    if (record?.cancelled) this.cancel()
    else if (record) record.inFlight = this
  }
  cancel(): void {
    this.next.cancelWithStatus(this.shared.grpc.status.CANCELLED, cancelledOnClient)
  }
  sendMessageWithContext(context: Parameters<NextCall["sendMessageWithContext"]>[0], message: unknown): void {
    if (this.record) this.record.sent = true
    this.next.sendMessageWithContext(context, message)
  }
  sendMessage(message: unknown): void {
    if (this.record) this.record.sent = true
    this.next.sendMessage(message)
  }
  onReceiveMetadata(metadata: GrpcJs.Metadata): void {
    if (this.record) this.record.answered = true
    this.listener?.onReceiveMetadata?.(metadata)
  }
  onReceiveMessage(message: unknown): void {
    this.listener?.onReceiveMessage?.(message)
  }
  onReceiveStatus(status: GrpcJs.StatusObject): void {
    // Ended: an abort during a later request of the operation (a poll's wait) has nothing here to cancel.
    if (this.record) this.record.inFlight = undefined
    this.shared.onStatus(this.record, status)
    this.listener?.onReceiveStatus?.(status)
  }
  cancelWithStatus(status: GrpcJs.status, details: string): void {
    this.next.cancelWithStatus(status, details)
  }
  getPeer(): string {
    return this.next.getPeer()
  }
  startRead(): void {
    this.next.startRead()
  }
  halfClose(): void {
    this.next.halfClose()
  }
  getAuthContext(): ReturnType<NextCall["getAuthContext"]> {
    return this.next.getAuthContext()
  }
}

/**
 * The interceptor of one agent's calls; a refusal's `retry-after` (trailer
 * or `RetryInfo`) goes to its record.
 */
const interceptor = (modules: Modules, calls: Map<string, CallRecord>): GrpcJs.Interceptor => {
  const { grpc } = modules
  const detailsKey = modules.errors.GRPC_STATUS_DETAILS_BIN
  const onStatus = (record: CallRecord | undefined, status: GrpcJs.StatusObject) => {
    if (status.code === grpc.status.OK) return
    const raw = status.metadata?.get(detailsKey)[0]
    let delay: Duration.Duration | undefined
    if (raw !== undefined) {
      try {
        delay = readDetails(modules, raw)
      } catch {
        // Dropped, so the SDK reads the bare status and the call ends; the record says why it reads as garbled.
        status.metadata.remove(detailsKey)
        if (record) record.undecodableDetails = true
      }
    }
    const header = status.metadata?.get("retry-after")[0]
    const retryAfter = typeof header === "string" ? parseRetryAfter(header, Date.now()) : delay
    if (record && retryAfter !== undefined) record.retryAfter = retryAfter
  }
  const shared: Shared = { grpc, calls, onStatus }
  // grpc-js types an interceptor's result as its own class, but uses only the call interface `Watched` implements.
  // eslint-disable-next-line no-restricted-syntax -- see above: Watched is the call, not the class
  return (options, nextCall) => new Watched(nextCall(options), shared) as unknown as GrpcJs.InterceptingCall
}

/** Status codes of a server that answered it would not act on the request, without an A2A error. */
const refusals: ReadonlySet<string> = new Set([
  "INVALID_ARGUMENT",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "FAILED_PRECONDITION",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "UNAUTHENTICATED",
  "RESOURCE_EXHAUSTED"
])

const metadataProblem: Fields = { reason: "InvalidRequest", delivery: "NotSent", detail: unsendableMetadataDetail }

/**
 * What grpc-js says of a message over a receive limit: ours, for an answer
 * (the server acted), or the server's, for our request (it refused it).
 */
const tooLarge = /^Received message larger than max/

/** What grpc-js says when no connection could be made: the call never reached a stream. */
const notConnected = /No connection established|Name resolution failed|ECONNREFUSED|DNS resolution failed/

/**
 * The gRPC reading of a failure. The SDK throws its A2A error classes for a
 * status with an `ErrorInfo`, else its generic error with `status` and
 * grpc-js's `ServiceError` as `cause`.
 */
const classifier = (names: ReadonlyMap<number, string>) => (facts: Facts, ctx: CallContext): Fields | undefined => {
  if (facts.messages.some((m) => unsendableMetadata.test(m))) return metadataProblem
  const error = facts.chain.find((e) => prop(e, "transport") === "grpc" && typeof prop(e, "status") === "number")
  if (error === undefined) return undefined
  const code = prop(error, "status") as number
  const grpcStatus = names.get(code) ?? String(code)
  const sent = ctx.record?.sent !== false
  const lost: Fields = {
    reason: ctx.streamStarted ? "StreamInterrupted" : "ConnectionLost",
    delivery: "Unknown",
    grpcStatus
  }
  if (ctx.record?.undecodableDetails) return { reason: "InvalidResponse", delivery: "Unknown", grpcStatus }
  const a2a = a2aErrorFields(facts, ctx)
  if (a2a !== undefined) return { ...a2a, grpcStatus }
  const details = String(prop(prop(error, "cause"), "details") ?? prop(error, "message") ?? "")
  switch (grpcStatus) {
    case "CANCELLED": {
      // Ours: the call's signal fired, for its time or an interruption; any other is the peer's or the line's.
      const signal = ctx.signal
      if (signal?.aborted !== true) return lost
      const timedOut = prop(signal.reason, "name") === "TimeoutError"
      return { reason: timedOut ? "Timeout" : "Aborted", delivery: sent ? "Unknown" : "NotSent", grpcStatus }
    }
    case "UNAVAILABLE":
      // A message handed to grpc-js may be on the wire when the line drops: NotSent only where no connection was made.
      return !sent || notConnected.test(details)
        ? { reason: "ConnectionRefused", delivery: "NotSent", grpcStatus }
        : lost
    case "DEADLINE_EXCEEDED":
      // Never our time limit (the SDK sets deadlines per factory, and we set none): a proxy's or a server's.
      return { reason: "Timeout", delivery: sent ? "Unknown" : "NotSent", grpcStatus }
    case "RESOURCE_EXHAUSTED":
      if (tooLarge.test(details)) {
        // The answer was over our limit, after the server began it; or the request over the server's, refused
        // before any answer: HTTP's 413, never to be sent again as it is (see `answerStatus`).
        return ctx.record?.answered === true
          ? { reason: "InvalidResponse", delivery: "Unknown", grpcStatus }
          : { reason: "HttpStatus", delivery: ctx.streamStarted ? "Unknown" : "Refused", grpcStatus }
      }
      break
    case "INTERNAL":
      // grpc-js's own, for an answer it could not decode.
      if (details.startsWith("Response message parsing error")) {
        return { reason: "InvalidResponse", delivery: "Unknown", grpcStatus }
      }
      break
  }
  return {
    reason: "HttpStatus",
    delivery: !ctx.streamStarted && refusals.has(grpcStatus) ? "Refused" : "Unknown",
    grpcStatus
  }
}

/** The gRPC transport of one agent: its factory and its binding. */
export interface Grpc {
  readonly factory: GrpcTransportFactory
  readonly binding: Binding
}

/**
 * Loads gRPC and builds an agent's factory, with v0.3 peers included and
 * the given channel credentials; rejects when the optional packages are
 * missing.
 *
 * @internal
 */
export const make = (credentials?: object): Promise<Grpc> =>
  load().then((modules) => {
    const calls = new Map<string, CallRecord>()
    let next = 0
    const names = new Map(Object.entries(modules.errors.GRPC_STATUS_CODE).map(([name, code]) => [code, name]))
    const factory = new modules.factory({
      legacyCompat: { enabled: true },
      // Typed loosely on the public face, as `@grpc/grpc-js` is optional there; the SDK's default is insecure.
      ...(credentials === undefined ? {} : { grpcChannelCredentials: credentials as GrpcJs.ChannelCredentials }),
      grpcCallOptions: { interceptors: [interceptor(modules, calls)] }
    })
    return {
      factory,
      binding: {
        transport: "GRPC",
        cancelsByRecord: true,
        // An entry leaves the table when the interceptor takes it, or when its request settles without having
        // reached grpc-js (metadata grpc-js refused, say).
        parameters: (record, headers) => {
          const id = String(next++)
          calls.set(id, record)
          return { ...headers, [callKey]: id }
        },
        release: (parameters) => {
          const id = parameters[callKey]
          if (id !== undefined) calls.delete(id)
        },
        classify: classifier(names)
      }
    }
  })
