/**
 * What the server's other transports are configured and served with, in
 * types that name none of their optional packages: a user without
 * `@grpc/grpc-js` type-checks against these declarations all the same.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import type * as internalAuthentication from "../caller/authentication.js"
import type { RequestHandler } from "../handler/core.js"
import type * as internalSubscription from "../handler/subscription.js"
import type * as internalHttp from "../http/body.js"
import type * as internalLoad from "../http/load.js"

export { TransportError } from "../../serverErrors.js"

/**
 * `@grpc/grpc-js`'s `ServerCredentials`, by a member of its own, so that
 * these types need not import the optional package.
 *
 * @internal
 */
export interface GrpcServerCredentials {
  _isSecure(): boolean
}

/** @internal */
export interface GrpcOptions {
  /** Default `127.0.0.1`. */
  readonly host?: string | undefined
  /** Default `0`: any free port. */
  readonly port?: number | undefined
  /** `ServerCredentials` of `@grpc/grpc-js`. Default: insecure, for loopback. */
  readonly credentials?: GrpcServerCredentials | undefined
  /** The `host:port` put in the card, when the server sits behind a proxy. Default: the bound address. */
  readonly publicAddress?: string | undefined
}

/** What another transport's service shares with the JSON-RPC route. @internal */
export interface Core {
  /** The request handler with its stages (its claim, its id checks, its subscriptions), as every transport calls it. */
  readonly handler: RequestHandler
  readonly subscriptions: internalSubscription.Subscriptions
  readonly state: internalHttp.State
  readonly load: internalLoad.Load | undefined
  readonly gate: internalAuthentication.Gate | undefined
}

/** A transport on a port of its own, bound, to be served and drained with the app. @internal */
export interface OwnPort {
  /** Where it is reached, as the card gives it. */
  readonly url: string
  /** Starts serving, calling `core`'s handler. */
  readonly serve: (core: Core) => Effect.Effect<void>
  /** `shutdown`, then this transport drained. */
  readonly draining: (shutdown: Effect.Effect<void>) => Effect.Effect<void>
}
