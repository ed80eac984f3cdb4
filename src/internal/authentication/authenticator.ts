/**
 * What an authenticator is: the caller it finds in a request, or why it
 * refuses one, and the scheme it declares in the card. Apart from the
 * server's gate, which runs authenticators, so that building one
 * (`Authentication.apiKey`, `Authentication.jwt`) loads no server.
 *
 * @internal
 */
import type { AgentCard } from "@a2a-js/sdk"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as internalTransport from "../wire/transport.js"

/** @internal */
export interface Caller {
  /** Stable: the owner of the caller's tasks and its idempotency identity. Never a credential. */
  readonly id: string
  /** For people reading logs and agents greeting callers. */
  readonly name: string
}

/** @internal */
export interface Request {
  /** Header names in lower case; on gRPC, the call's text metadata. */
  readonly headers: Readonly<Record<string, string | undefined>>
  /** The HTTP method (`POST`, `GET`), or on gRPC the call's full method name (`/lf.a2a.v1.A2AService/SendMessage`). */
  readonly method: string
  readonly transport: internalTransport.Transport
  /** The peer's address, without its port; behind a proxy, the proxy's. */
  readonly remoteAddress: string | undefined
}

/**
 * A request without valid credentials. `message` is for the server's log
 * (the caller is told only "Authentication required." or "Invalid
 * credentials."); it must never hold the credential itself.
 *
 * @internal
 */
export class Unauthenticated extends Schema.TaggedError<Unauthenticated>("effect-a2a/Unauthenticated")(
  "Unauthenticated",
  {
    reason: Schema.Literal("MissingCredentials", "InvalidCredentials"),
    message: Schema.String
  }
) {}

/**
 * What an authenticator declares in the card, and the `WWW-Authenticate`
 * challenge of its refusals.
 *
 * @internal
 */
export interface Scheme {
  readonly securitySchemes: AgentCard["securitySchemes"]
  readonly securityRequirements: AgentCard["securityRequirements"]
  /** The `WWW-Authenticate` value, e.g. `Bearer realm="a2a"`. */
  readonly challenge: string
}

/**
 * The {@link Scheme} of one security scheme, named `name` in the card and
 * required alone, without scopes.
 *
 * @internal
 */
export const schemeOf = (
  name: string,
  securityScheme: NonNullable<AgentCard["securitySchemes"]>[string],
  challenge: string
): Scheme => ({
  securitySchemes: { [name]: securityScheme },
  securityRequirements: [{ schemes: { [name]: { list: [] } } }],
  challenge
})

/** @internal */
export interface Authenticator<R = never> {
  (request: Request): Effect.Effect<Caller, Unauthenticated, R>
  /** Absent for a plain function: the card declares nothing, and refusals challenge `Bearer`. */
  readonly scheme?: Scheme | undefined
  /**
   * The headers that carry credentials, besides those always treated so
   * ({@link alwaysCredentials}): redacted in the HTTP spans, and left out
   * of the agent's `AgentRequest.headers`.
   */
  readonly credentialHeaders?: ReadonlyArray<string> | undefined
}
