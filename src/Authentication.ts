/**
 * Who calls an `A2AServer`: an `authenticate` function, run on every
 * request (every transport) before anything else, that answers the
 * {@link Caller} or refuses with {@link Unauthenticated}.
 *
 * A refused request is answered HTTP 401 with `WWW-Authenticate` (JSON-RPC
 * and HTTP+JSON) or `UNAUTHENTICATED` (gRPC), and nothing runs. An
 * authenticated caller owns the tasks it creates: another caller's
 * `GetTask`, `CancelTask`, `SubscribeToTask`, `ListTasks`, push-config call
 * or message to one of them is answered `TaskNotFound`, as for a task that
 * does not exist. The caller's id is a log annotation (`caller`) and a span
 * attribute (`a2a.caller`) of its runs, and its idempotency identity.
 *
 * The agent card stays public; the extended card, like every other
 * operation, needs credentials. Without `authenticate`, every caller is
 * anonymous and every task is everyone's.
 *
 * @since 0.1.0
 */
import type * as internalTransport from "./internal/wire/transport.js"
import * as internal from "./internal/server/authentication.js"

/**
 * An authenticated caller. `id` is stable and never a credential: it owns
 * the caller's tasks (tasks are kept under it, in the database too) and is
 * written in logs and spans. `name` is for people.
 *
 * @example
 * ```ts
 * import type { Authentication } from "effect-a2a"
 *
 * const caller: Authentication.Caller = { id: "billing-service", name: "Billing" }
 * ```
 * @category models
 * @since 0.1.0
 */
export type Caller = internal.Caller

/**
 * What an authenticator sees of a request: its headers (names in lower
 * case; on gRPC, the call's text metadata), its method (the HTTP method,
 * or gRPC's full method name), its transport and the peer's address
 * (behind a proxy, the proxy's). Nothing of the body: authentication
 * happens before the body is read.
 *
 * @example
 * ```ts
 * import type { Authentication } from "effect-a2a"
 *
 * const fromLoopback = (request: Authentication.Request): boolean =>
 *   request.remoteAddress === "127.0.0.1" || request.remoteAddress === "::1"
 * ```
 * @category models
 * @since 0.1.0
 */
export type Request = internal.Request

/**
 * A request without valid credentials: `MissingCredentials` or
 * `InvalidCredentials`. The caller is told only "Authentication required."
 * or "Invalid credentials."; `message` goes to the server's log (as
 * `detail`, beside `reason`) and must never contain the credential.
 *
 * @example
 * ```ts
 * import { Authentication } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const authenticate: Authentication.Authenticator = (request) =>
 *   request.headers["x-team"] === "ops"
 *     ? Effect.succeed({ id: "ops", name: "Operations" })
 *     : Effect.fail(new Authentication.Unauthenticated({ reason: "MissingCredentials", message: "no x-team header" }))
 * ```
 * @category errors
 * @since 0.1.0
 */
export const Unauthenticated: typeof internal.Unauthenticated = internal.Unauthenticated

/**
 * @category errors
 * @since 0.1.0
 */
export type Unauthenticated = internal.Unauthenticated

/**
 * What a ready-made authenticator declares: the card's `securitySchemes`
 * and `securityRequirements` (written into the card unless the card
 * declares its own) and the `WWW-Authenticate` challenge of its refusals.
 *
 * @example
 * ```ts
 * import type { Authentication } from "effect-a2a"
 *
 * const scheme: Authentication.Scheme = {
 *   securitySchemes: {
 *     team: { scheme: { $case: "apiKeySecurityScheme", value: { name: "X-Team", location: "header", description: "" } } }
 *   },
 *   securityRequirements: [{ schemes: { team: { list: [] } } }],
 *   challenge: "ApiKey header=\"X-Team\""
 * }
 * ```
 * @category models
 * @since 0.1.0
 */
export type Scheme = internal.Scheme

/**
 * `A2AServer`'s `authenticate` option: an Effect from the request to its
 * caller. A plain function is one; a ready-made one also carries its
 * {@link Scheme}. Without a scheme, refusals challenge `Bearer` and the card
 * declares what its options say.
 *
 * An authenticator that dies, or answers a caller whose `id` is empty, is
 * an internal error: the request is answered 500 (gRPC `INTERNAL`) with an
 * error id, whose cause is in the log.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor, Authentication } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * const authenticate: Authentication.Authenticator = (request) => {
 *   const team = request.headers["x-team"]
 *   return team === undefined
 *     ? Effect.fail(new Authentication.Unauthenticated({ reason: "MissingCredentials", message: "no x-team header" }))
 *     : Effect.succeed({ id: team, name: team })
 * }
 *
 * A2AServer.layer({
 *   agent: () => Effect.succeed(AgentExecutor.completedText("hello")),
 *   card: { name: "greeter", description: "Says hello" },
 *   authenticate
 * })
 * ```
 * @category models
 * @since 0.1.0
 */
export type Authenticator<R = never> = internal.Authenticator<R>

/**
 * The name of a transport, as a {@link Request} gives it.
 *
 * @example
 * ```ts
 * import type { Authentication } from "effect-a2a"
 *
 * const onGrpc = (request: Authentication.Request): boolean => request.transport === "GRPC"
 * ```
 * @category models
 * @since 0.1.0
 */
export type Transport = internalTransport.Transport
