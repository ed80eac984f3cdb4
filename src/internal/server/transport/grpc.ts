/**
 * The A2A server's gRPC transport: the SDK's `grpcService` (v1.0,
 * `lf.a2a.v1.A2AService`) and `legacyGrpcService` (v0.3,
 * `a2a.v1.A2AService`) on one `@grpc/grpc-js` server of its own port, both
 * calling the request handler the JSON-RPC route calls (its claim, its
 * subscriptions, its idempotency, its load accounting).
 *
 * What the SDK would send as it is, it gets sanitised first: a non-A2A
 * error becomes INTERNAL with only an error id and an ErrorInfo; a frame
 * that does not decode, or is too large, is answered with an ErrorInfo
 * instead of grpc-js's bare status.
 *
 * gRPC's packages are optional: they are loaded only when gRPC is served.
 *
 * @internal
 */
import { type AgentCard, SendMessageRequest } from "@a2a-js/sdk"
import { A2A_ERROR_DOMAIN, ERROR_INFO_TYPE } from "@a2a-js/sdk/errors"
import { type A2ARequestHandler, type ServerCallContext, UnauthenticatedUser, type User } from "@a2a-js/sdk/server"
import type * as Grpc from "@grpc/grpc-js"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { bracketed, hostForUrl, ListenError } from "../../listen.js"
import * as Peer from "../../peer.js"
import * as ErrorId from "../../wire/errorId.js"
import * as ErrorTable from "../../wire/errorTable.js"
import * as internalNesting from "../../wire/nesting.js"
import * as requestShape from "../../wire/requestShape.js"
import type * as internalTransport from "../../wire/transport.js"
import * as internalAuthentication from "../caller/authentication.js"
import type { RequestHandler } from "../handler/core.js"
import * as internalHttp from "../http/body.js"
import { type Core, type GrpcOptions, type OwnPort, TransportError } from "./transports.js"

const modules = Peer.load(
  Peer.grpcPackages,
  `A2AServer's "GRPC" transport (or leave "GRPC" out of transports)`,
  async () => ({
    grpc: await import("@grpc/grpc-js"),
    wire: await import("@bufbuild/protobuf/wire"),
    errors: await import("@a2a-js/sdk/errors/grpc"),
    service: await import("@a2a-js/sdk/server/grpc"),
    legacy: await import("@a2a-js/sdk/compat/v0_3/server/grpc")
  })
).pipe(
  Effect.mapError((missing) =>
    new TransportError({ reason: "MissingPackage", transport: "GRPC", message: missing.message })
  )
)

type Modules = Effect.Effect.Success<typeof modules>

/**
 * `status`, an A2A error's as the SDK's service mapped it, with the code
 * the error table gives its ErrorInfo's reason: the table decides what the
 * SDK's own table would. Its details say the same code.
 *
 * @internal
 */
export const throughTable = (
  errors: Pick<
    Modules["errors"],
    "decodeStatus" | "decodeErrorInfo" | "encodeGrpcStatusDetails" | "GRPC_STATUS_DETAILS_BIN"
  >,
  status: Partial<Grpc.StatusObject>
): Partial<Grpc.StatusObject> => {
  const bin = status.metadata?.get(errors.GRPC_STATUS_DETAILS_BIN)[0]
  if (bin === undefined) return status
  const decoded = errors.decodeStatus(typeof bin === "string" ? Buffer.from(bin, "binary") : bin)
  const detail = decoded.details.find((detail) => detail.typeUrl === ERROR_INFO_TYPE)
  const info = detail === undefined ? undefined : errors.decodeErrorInfo(Buffer.from(detail.value))
  const row = info === undefined || info.domain !== A2A_ERROR_DOMAIN ? undefined : ErrorTable.ofReason(info.reason)
  const code = row === undefined ? undefined : ErrorTable.grpcCodes[row.grpc]
  if (info === undefined || code === undefined || code === status.code || status.metadata === undefined) return status
  const metadata = status.metadata.clone()
  metadata.set(
    errors.GRPC_STATUS_DETAILS_BIN,
    errors.encodeGrpcStatusDetails(code, decoded.message, info.reason, info.metadata)
  )
  return { ...status, code, metadata }
}

/**
 * The largest frame grpc-js lets through to the service: twice the server's
 * bound, so that a frame over the bound but within this still reaches the
 * wrapped deserializer, which answers it with an ErrorInfo. Beyond it,
 * grpc-js answers RESOURCE_EXHAUSTED itself, without details, having read no
 * more than this.
 */
const frameLimit = (maxBodyBytes: number): number => Math.min(2 * maxBodyBytes, 2 ** 31 - 1)

/** A gRPC server, its port not bound yet. */
interface Unbound {
  readonly server: Grpc.Server
  readonly modules: Modules
  readonly maxBodyBytes: number
}

/** A bound gRPC server, its calls held until `start` gives them the core they call. */
interface Bound extends Unbound {
  /** `host:port`, as cards give gRPC URLs. */
  readonly url: string
  readonly start: (core: Core) => void
}

/** Binds the gRPC port. The scope's close ends the server at once if {@link draining} did not end it before. */
const listen = (
  options: GrpcOptions | undefined,
  maxBodyBytes: number
): Effect.Effect<Bound, TransportError | ListenError, Scope.Scope> =>
  Effect.gen(function*() {
    const loaded = yield* modules
    const host = options?.host ?? "127.0.0.1"
    const requested = `${bracketed(host)}:${options?.port ?? 0}`
    const server = new loaded.grpc.Server({
      "grpc.max_receive_message_length": frameLimit(maxBodyBytes)
    })
    const credentials = (options?.credentials as Grpc.ServerCredentials | undefined) ??
      loaded.grpc.ServerCredentials.createInsecure()
    // The services are there before the port is bound: a call to one not added yet would be UNIMPLEMENTED.
    const start = yield* serve({ server, modules: loaded, maxBodyBytes })
    const port = yield* Effect.acquireRelease(
      Effect.async<number, ListenError>((resume) => {
        server.bindAsync(requested, credentials, (error, port) => {
          resume(error === null ? Effect.succeed(port) : Effect.fail(new ListenError(error, requested)))
        })
      }),
      () => Effect.sync(() => server.forceShutdown())
    )
    return {
      server,
      modules: loaded,
      url: options?.publicAddress ?? `${hostForUrl(host)}:${port}`,
      maxBodyBytes,
      start
    }
  })

/**
 * The gRPC server `transports` asks for, bound, or undefined. Left unsaid,
 * it is asked for when `byDefault`, and then only served if its packages
 * load; named, they must.
 *
 * @internal
 */
export const listenFor = (
  options: {
    readonly transports?: ReadonlyArray<internalTransport.Transport> | undefined
    readonly grpc?: GrpcOptions | undefined
  },
  maxBodyBytes: number,
  byDefault: boolean
): Effect.Effect<OwnPort | undefined, TransportError | ListenError, Scope.Scope> => {
  const bound = options.transports !== undefined
    ? options.transports.includes("GRPC") ? listen(options.grpc, maxBodyBytes) : Effect.succeed(undefined)
    : byDefault
    ? Effect.catchTag(
      listen(options.grpc, maxBodyBytes),
      "TransportError",
      (error) => Effect.as(Effect.logDebug(`gRPC is not served: ${error.message}`), undefined)
    )
    : Effect.succeed(undefined)
  return Effect.map(bound, (bound) =>
    bound === undefined ? undefined : {
      url: bound.url,
      serve: (core) => Effect.sync(() => bound.start(core)),
      draining: (shutdown) => draining(shutdown, bound)
    })
}

// When a shed or refused caller may come back, as HTTP's `Retry-After: 1`.
const retryAfter = Duration.seconds(1)

/** A request whose frame the service cannot take, with the status it is answered with. */
class Refused {
  constructor(readonly status: Grpc.StatusObject) {}
}

type Call = Grpc.ServerUnaryCall<unknown, unknown> | Grpc.ServerWritableStream<unknown, unknown>

// Each method of a service takes its own kind of call; the wrapper hands each the call grpc-js gave it for that method.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a parameter for every call kind: unknown would refuse each method's own
type Handle = (call: any, callback?: Grpc.sendUnaryData<unknown>) => unknown

/**
 * The v1.0 requests the shape check reads, by method, as ProtoJSON: protobuf
 * cannot carry a wrong type, but its decoder skips a field of the wrong wire
 * type, so that a part sent with its content so is read as a part without
 * one. The other requests' fields are scalars, which a skipped field leaves
 * at their default, which the handler refuses itself.
 */
const checkedRequests: Readonly<Record<string, (decoded: never) => unknown>> = {
  SendMessage: SendMessageRequest.toJSON,
  SendStreamingMessage: SendMessageRequest.toJSON
}

/**
 * Whether a decoded send has nothing the shape check could find: on what
 * protobuf decoded, that is a part without content (or with a `data`
 * without value), or a role no name stands for. Most sends are so, and
 * skip the check's JSON form.
 */
const plainSend = (decoded: unknown): boolean => {
  const message = (decoded as Partial<SendMessageRequest> | null)?.message
  if (message === undefined) return true
  const role: unknown = message.role
  if (typeof role !== "number" || role < 0 || role > 2) return false
  for (const part of message.parts ?? []) {
    const value: unknown = part.content?.value
    if (value === undefined || value === null) return false
  }
  return true
}

// Why a decoded v1.0 request is not of its method's shape (`requestShape.ts`), as JSON-RPC and HTTP+JSON refuse it.
const shapeProblem = (path: string, decoded: unknown): string | undefined => {
  const method = path.slice(path.lastIndexOf("/") + 1)
  const toJson = checkedRequests[method]
  return toJson === undefined || plainSend(decoded)
    ? undefined
    : requestShape.paramsProblem(method, toJson(decoded as never) as Record<string, unknown>)
}

/** The methods that start or follow a run, by the service's (v1.0 and v0.3) names, as the load counts them. */
const countedMethods: Readonly<Record<string, string>> = {
  sendMessage: "SendMessage",
  sendStreamingMessage: "SendStreamingMessage",
  subscribeToTask: "SubscribeToTask",
  taskSubscription: "SubscribeToTask"
}

// The request as the load reads it: its message is `message` in v1.0, `request` in v0.3.
const loadBody = (method: string, request: unknown) => {
  const fields = request as { readonly message?: unknown; readonly request?: unknown } | null
  return { method, params: { message: fields?.message ?? fields?.request } }
}

// "127.0.0.1:5000" or "::1:5000": the caller is its address, as on HTTP, without the port.
const callerOf = (peer: string): string => peer.replace(/:\d+$/, "")

// Once `call` has written what it holds, or `gone` resolved first.
const drained = (call: Grpc.ServerWritableStream<unknown, unknown>, gone: Promise<void>): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      call.off("drain", done)
      resolve()
    }
    call.on("drain", done)
    void gone.then(done)
  })

/**
 * Adds the v1.0 and v0.3 services to `bound`, calling the handler of the
 * core the returned function starts them with; a call that comes before
 * waits for it.
 */
const serve = (bound: Unbound): Effect.Effect<(core: Core) => void> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    let core: Core | undefined
    const waiting: Array<() => void> = []
    const start = (built: Core) => {
      core = built
      for (const call of waiting.splice(0)) call()
    }
    const { errors, grpc, legacy, service, wire } = bound.modules
    const runSync = Runtime.runSync(runtime)
    const log = (where: string, cause: unknown): string =>
      runSync(internalHttp.opaqueText("gRPC", String(cause), { where }, Cause.isCause(cause) ? cause : undefined))

    const status = (
      code: number,
      message: string,
      reason: string,
      extra: ReadonlyArray<Uint8Array> = [],
      trailers: Record<string, string> = {}
    ): Grpc.StatusObject => {
      const metadata = new grpc.Metadata()
      metadata.set(
        errors.GRPC_STATUS_DETAILS_BIN,
        Buffer.concat([errors.encodeGrpcStatusDetails(code, message, reason), ...extra])
      )
      for (const [key, value] of Object.entries(trailers)) metadata.set(key, value)
      return { code, details: message, metadata }
    }
    const internal = (text: string) => status(errors.GRPC_STATUS_CODE.INTERNAL, text, "INTERNAL_ERROR")
    // `google.rpc.RetryInfo { retry_delay: 1s }` as one more entry of the Status's `details` (field 3):
    // repeated fields concatenate, so it is appended to the SDK's own encoding.
    const retryInfo = (() => {
      const delay = new wire.BinaryWriter().uint32(8).int64(Duration.toSeconds(retryAfter)).finish()
      const info = new wire.BinaryWriter().uint32(10).bytes(delay).finish()
      const any = new wire.BinaryWriter().uint32(10).string("type.googleapis.com/google.rpc.RetryInfo").uint32(18)
        .bytes(info).finish()
      return new wire.BinaryWriter().uint32(26).bytes(any).finish()
    })()
    const shed = () =>
      status(
        errors.GRPC_STATUS_CODE.RESOURCE_EXHAUSTED,
        "Too many requests in flight; retry later.",
        "RESOURCE_EXHAUSTED",
        [retryInfo],
        { "retry-after": String(Duration.toSeconds(retryAfter)) }
      )
    // As JSON-RPC's 503: refused before anything ran, so a client may send it again (here, later, or elsewhere).
    const closing = () =>
      status(errors.GRPC_STATUS_CODE.UNAVAILABLE, "The server is shutting down.", "UNSUPPORTED_OPERATION", [], {
        "retry-after": String(Duration.toSeconds(retryAfter))
      })

    // An error the SDK mapped: an A2A error carries its details already; any other gets only an error id.
    const sanitise = (
      error: Partial<Grpc.StatusObject> | null | undefined,
      where: string
    ): Partial<Grpc.StatusObject> => {
      if (error?.metadata?.get(errors.GRPC_STATUS_DETAILS_BIN).length) return throughTable(errors, error)
      const details = typeof error?.details === "string" ? error.details : String(error)
      return internal(ErrorId.isInternalErrorText(details) ? details : log(where, details))
    }

    // The call of each context, through its user: the SDK hands the call to the user builder only.
    const calls = new WeakMap<User, Call>()
    // The caller each call was authenticated as, for the user builder.
    const users = new WeakMap<Call, User>()
    // Only a stream reads its call back (`streaming`): a unary call's user is noted nowhere.
    const userBuilder = (call: Call): Promise<User> => {
      const user = users.get(call) ?? new UnauthenticatedUser()
      if ("write" in call) calls.set(user, call)
      return Promise.resolve(user)
    }
    const unauthenticated = (refused: internalAuthentication.Refused) =>
      refused._tag === "Broken"
        ? internal(refused.message)
        : status(errors.GRPC_STATUS_CODE.UNAUTHENTICATED, refused.message, "UNAUTHENTICATED", [], {
          "www-authenticate": refused.challenge
        })
    // Text metadata as headers; binary values (`-bin`) are no credential an authenticator reads.
    const headersOf = (metadata: Grpc.Metadata): Record<string, string> => {
      const headers: Record<string, string> = {}
      for (const [key, value] of Object.entries(metadata.getMap())) if (typeof value === "string") headers[key] = value
      return headers
    }
    // A failure that is not the caller's to read is logged whole here, where it is still known, and goes on as its
    // error id only.
    const opaque = (cause: Cause.Cause<unknown>, where: string): unknown =>
      runSync(internalHttp.opaqueFailure("gRPC", cause, { where }))
    // The SDK's services are given it before the core is built, and call it only once it is: each call runs the
    // Effect handler's operation, its failure as the SDK's service maps a rejection.
    // Settled by the fiber's own observer: one promise per call, not a second one chained on runPromiseExit's.
    const runFork = Runtime.runFork(runtime)
    const unary = <P, A>(
      where: string,
      operation: (handler: RequestHandler) => (params: P, context: ServerCallContext) => Effect.Effect<A, unknown>
    ) =>
    (params: P, context: ServerCallContext): Promise<A> =>
      new Promise((resolve, reject) => {
        // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- the services call it only once the core is built (above)
        runFork(operation(core!.handler)(params, context)).addObserver((exit) =>
          Exit.isSuccess(exit) ? resolve(exit.value) : reject(opaque(exit.cause, where))
        )
      })
    const streaming = <P>(
      where: string,
      operation: (
        handler: RequestHandler
      ) => (params: P, context: ServerCallContext) => Stream.Stream<unknown, unknown>
    ) =>
    (params: P, context: ServerCallContext): AsyncGenerator<unknown> => {
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- as above
      const current = core!
      const call = (context.user === undefined ? undefined : calls.get(context.user)) as
        | Grpc.ServerWritableStream<unknown, unknown>
        | undefined
      // Resolved when the stream is done with: its caller gone, or its reader dropped for reading no more.
      let leave = () => {}
      const gone = new Promise<void>((resolve) => {
        leave = resolve
      })
      const events = Stream.toAsyncIterableRuntime(
        Stream.catchAllCause(
          operation(current.handler)(params, context),
          (cause) => Stream.fail(opaque(cause, where))
        ),
        runtime
      )[Symbol.asyncIterator]()
      // Known once the handler is called: its reader is noted then.
      void current.subscriptions.dropped(context)?.then(leave)
      const stream = (async function*() {
        for (;;) {
          // The SDK writes each event without waiting: the next is read once the call took the last, so that
          // the events of a reader that does not read wait in the bounded queue (`slowReader.ts`).
          if (call?.writableNeedDrain === true) await drained(call, gone)
          // A stream let go of (its `return`) leaves a pending read unsettled: the caller gone ends it here.
          const next = await Promise.race([events.next(), gone.then(() => ended)])
          if (next.done === true) return
          yield next.value
        }
      })()
      // A caller gone: what its stream holds (its place on the task's bus, the hold on its task) is let go.
      call?.once("cancelled", () => {
        leave()
        void stream.return(undefined).catch(() => undefined)
        void events.return?.(undefined)?.catch(() => undefined)
        current.subscriptions.close(context)
      })
      return stream
    }
    const ended: IteratorResult<unknown> = { done: true, value: undefined }
    // The card does not change while the server runs: the SDK's services read it at every call.
    let card: Promise<AgentCard> | undefined
    const handler: A2ARequestHandler = {
      getAgentCard: () =>
        // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- as above
        card ??= Runtime.runPromise(runtime)(core!.handler.agentCard),
      getAuthenticatedExtendedAgentCard: unary(
        "getAuthenticatedExtendedAgentCard",
        (handler) => (_: unknown, context) => handler.extendedAgentCard(context)
      ),
      sendMessage: unary("sendMessage", (handler) => handler.sendMessage),
      sendMessageStream: streaming("sendMessageStream", (handler) =>
        handler.sendMessageStream) as A2ARequestHandler["sendMessageStream"],
      getTask: unary("getTask", (handler) =>
        handler.getTask),
      listTasks: unary("listTasks", (handler) => handler.listTasks),
      cancelTask: unary("cancelTask", (handler) => handler.cancelTask),
      resubscribe: streaming("resubscribe", (handler) => handler.resubscribe) as A2ARequestHandler["resubscribe"],
      createTaskPushNotificationConfig: unary(
        "createTaskPushNotificationConfig",
        (handler) => handler.createPushConfig
      ),
      getTaskPushNotificationConfig: unary("getTaskPushNotificationConfig", (handler) => handler.getPushConfig),
      listTaskPushNotificationConfigs: unary("listTaskPushNotificationConfigs", (handler) => handler.listPushConfigs),
      deleteTaskPushNotificationConfig: unary("deleteTaskPushNotificationConfig", (handler) => handler.deletePushConfig)
    }

    const wrapped = (implementation: Grpc.UntypedServiceImplementation): Grpc.UntypedServiceImplementation =>
      Object.fromEntries(
        Object.entries(implementation).map(([name, untyped]): [string, Grpc.UntypedHandleCall] => {
          // grpc-js calls a streaming method without a callback, which its handler types do not say.
          const handle = untyped as Handle
          const counted = countedMethods[name]
          const method: Handle = (call: Grpc.ServerWritableStream<unknown, unknown>, callback) => {
            const refuse = (status: Partial<Grpc.StatusObject>) =>
              callback === undefined ? call.emit("error", status) : callback(status, null)
            if (core === undefined) return void waiting.push(() => method(call, callback))
            const current = core
            if (current.state.closing) return refuse(closing())
            if (call.request instanceof Refused) return refuse(call.request.status)
            const gate = current.gate
            if (gate === undefined) return admit(current, call, callback, refuse, undefined)
            gate({
              headers: headersOf(call.metadata),
              method: call.getPath(),
              transport: "GRPC",
              remoteAddress: callerOf(call.getPeer())
            })
              .then((checked) => {
                if (!internalAuthentication.isUser(checked)) return refuse(unauthenticated(checked))
                users.set(call, checked)
                admit(current, call, callback, refuse, checked)
              })
              .catch((error: unknown) => refuse(internal(log(name, Cause.die(error)))))
          }
          const admit = (
            core: Core,
            call: Grpc.ServerWritableStream<unknown, unknown>,
            callback: Grpc.sendUnaryData<unknown> | undefined,
            refuse: (status: Partial<Grpc.StatusObject>) => void,
            user: User | undefined
          ) => {
            const admitted = counted === undefined
              ? undefined
              : core.load?.admit(
                loadBody(counted, call.request),
                internalAuthentication.loadKey(user, callerOf(call.getPeer()))
              )
            if (admitted === "shed") return refuse(shed())
            if (callback === undefined) {
              const emit = call.emit.bind(call)
              call.emit = (event: string | symbol, ...args: Array<unknown>) =>
                // grpc-js emits "error" with the status it sends.
                event === "error"
                  ? emit(event, sanitise(args[0] as Partial<Grpc.StatusObject>, name))
                  : emit(event, ...args)
            }
            const done = handle(
              call,
              callback === undefined
                ? undefined
                : (error, value) => callback(error == null ? error : sanitise(error, name), value)
            )
            if (admitted !== undefined) void Promise.resolve(done).finally(admitted)
            return done
          }
          return [name, method as Grpc.UntypedHandleCall]
        })
      )

    // A frame that does not decode, is over the bound, or is not of its request's shape (v1.0: `checked`) reaches
    // the method as a refusal, which it answers.
    const decoding = <D extends Grpc.ServiceDefinition>(definition: D, checked: boolean): D =>
      Object.fromEntries(
        Object.entries(definition).map(([name, method]) => [name, {
          ...method,
          requestDeserialize: (bytes: Buffer) => {
            if (bytes.length > bound.maxBodyBytes) {
              // RequestMalformed's code, as on HTTP+JSON's 413: not RESOURCE_EXHAUSTED, which clients read as a shed
              // request that may come back later; this one never will.
              return new Refused(status(
                errors.GRPC_STATUS_CODE.INVALID_ARGUMENT,
                `Request message too large: ${bytes.length} bytes, at most ${bound.maxBodyBytes}.`,
                "INVALID_PARAMS"
              ))
            }
            let decoded: unknown
            try {
              decoded = method.requestDeserialize(bytes)
            } catch {
              return new Refused(status(
                errors.GRPC_STATUS_CODE.INVALID_ARGUMENT,
                "Invalid params: the request message could not be decoded.",
                "INVALID_PARAMS"
              ))
            }
            const problem = internalNesting.nestingProblem(decoded) ??
              (checked ? shapeProblem(method.path, decoded) : undefined)
            return problem === undefined
              ? decoded
              : new Refused(status(errors.GRPC_STATUS_CODE.INVALID_ARGUMENT, problem, "INVALID_PARAMS"))
          }
        }])
      ) as D

    const options = { requestHandler: handler, userBuilder }
    bound.server.addService(
      decoding(service.A2AService, true),
      wrapped(service.grpcService(options))
    )
    bound.server.addService(
      decoding(legacy.LegacyA2AService, false),
      wrapped(legacy.legacyGrpcService(options))
    )
    return start
  })

/**
 * `shutdown` (which refuses new calls, then lets runs finish within
 * `shutdownTimeout`), its port open meanwhile so that a new call is told
 * UNAVAILABLE rather than refused a connection; then the gRPC server stops
 * taking calls and lets those still in progress end, their answers going
 * out, for up to a second; then it ends the rest.
 */
const draining = (shutdown: Effect.Effect<void>, bound: Bound): Effect.Effect<void> =>
  Effect.zipRight(
    shutdown,
    Effect.async<void>((resume) => {
      bound.server.tryShutdown(() => resume(Effect.void))
    }).pipe(
      Effect.timeout(Duration.seconds(1)),
      Effect.ignore,
      Effect.ensuring(Effect.sync(() => bound.server.forceShutdown()))
    )
  )
