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
import type * as Duration from "effect/Duration"
import type * as Redacted from "effect/Redacted"
import type { JSONWebKeySet, JWTPayload } from "jose"
import * as internalApiKey from "./internal/authentication/apiKey.js"
import * as internal from "./internal/authentication/authenticator.js"
import * as internalJwt from "./internal/authentication/jwt.js"
import type * as internalTransport from "./internal/wire/transport.js"

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
 * `credentialHeaders` names the headers it reads credentials from, beyond
 * `Authorization`, `Cookie` and `X-API-Key`: they are redacted in the
 * server's HTTP spans and left out of the agent's `AgentRequest.headers`
 * (`Authentication.apiKey` names its own header).
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

/**
 * The options of {@link apiKey}.
 *
 * @example
 * ```ts
 * import type { Authentication } from "effect-a2a"
 * import { Redacted } from "effect"
 *
 * const options: Authentication.ApiKeyOptions = {
 *   keys: { billing: Redacted.make("k-1f0c9e"), search: Redacted.make("k-77ab02") },
 *   header: "X-Agent-Key"
 * }
 * ```
 * @category ready-made
 * @since 0.1.0
 */
export interface ApiKeyOptions {
  /**
   * Caller id → its key: a record, or any iterable of pairs (a `HashMap`
   * from `Config.hashMap(Config.redacted(), …)` is one). The caller is
   * `{ id, name: id }`. Empty ids, empty keys and one key held by two
   * callers are refused at construction.
   */
  readonly keys:
    | Readonly<Record<string, Redacted.Redacted<string> | string>>
    | Iterable<readonly [string, Redacted.Redacted<string> | string]>
  /** The header that carries the key, read case-insensitively. Default `X-API-Key`. */
  readonly header?: string | undefined
  /** The scheme's name in the card's `securitySchemes`. Default `apiKey`. */
  readonly schemeName?: string | undefined
  /** The scheme's description in the card. */
  readonly description?: string | undefined
}

/**
 * An authenticator of API keys: the key in the `X-API-Key` header (or
 * `header`) names its caller. Each key is compared with every key of the
 * table in constant time (their SHA-256 digests, with
 * `crypto.timingSafeEqual`, no early exit), so an answer's timing says
 * nothing of which key, or how much of one, a request holds. A missing
 * header is `MissingCredentials`, an unknown key `InvalidCredentials`; no
 * message holds a key. The card declares an `apiKeySecurityScheme`, and
 * refusals challenge `ApiKey header="X-API-Key"`.
 *
 * Throws an `Error` at construction (naming callers, never keys) on an
 * empty table, an empty caller id or key, or one key held by two callers.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor, Authentication } from "effect-a2a"
 * import { Config, ConfigProvider, Effect, Layer } from "effect"
 *
 * // A2A_API_KEYS__billing=k-1f0c9e A2A_API_KEYS__search=k-77ab02: a map's entries are read under its
 * // name, and a path delimiter of "_" would split the name itself, so this reads the environment with "__".
 * const ServerLive = A2AServer.layerConfig({
 *   agent: Config.succeed(() => Effect.succeed(AgentExecutor.completedText("hello"))),
 *   card: { name: Config.succeed("greeter"), description: Config.succeed("Says hello") },
 *   authenticate: Config.map(Config.hashMap(Config.redacted(), "A2A_API_KEYS"), (keys) => Authentication.apiKey({ keys }))
 * }).pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromEnv({ pathDelim: "__" }))))
 * ```
 * @category ready-made
 * @since 0.1.0
 */
export const apiKey: (options: ApiKeyOptions) => Authenticator = internalApiKey.make

/**
 * The options of {@link jwt}: where the keys are (exactly one of `jwks`
 * and `keys`), and what a token must say.
 *
 * @example
 * ```ts
 * import type { Authentication } from "effect-a2a"
 *
 * const options: Authentication.JwtOptions = {
 *   jwks: "https://auth.example.com/.well-known/jwks.json",
 *   issuer: "https://auth.example.com/",
 *   audience: "booking-agent",
 *   algorithms: ["RS256"],
 *   clockTolerance: "30 seconds"
 * }
 * ```
 * @category ready-made
 * @since 0.1.0
 */
export type JwtOptions =
  & JwtClaims
  & (
    | {
      /** The URL of a remote JWKS, fetched when a token names a key not yet known (jose's `createRemoteJWKSet`). */
      readonly jwks: string | URL
      readonly keys?: undefined
    }
    | {
      /** A local JWKS, `{ keys: [...] }` (jose's `createLocalJWKSet`). */
      readonly keys: JSONWebKeySet
      readonly jwks?: undefined
    }
  )

/**
 * What {@link JwtOptions} asks of a token.
 *
 * @example
 * ```ts
 * import type { Authentication } from "effect-a2a"
 *
 * const claims: Authentication.JwtClaims = {
 *   issuer: ["https://auth.example.com/", "https://auth.example.org/"],
 *   audience: "booking-agent",
 *   algorithms: ["ES256", "RS256"],
 *   callerOf: (payload) => typeof payload.azp === "string" ? { id: payload.azp, name: payload.azp } : undefined
 * }
 * ```
 * @category ready-made
 * @since 0.1.0
 */
export interface JwtClaims {
  /** The `iss` a token must have (one of them). */
  readonly issuer: string | ReadonlyArray<string>
  /** The `aud` a token must have (one of them). */
  readonly audience: string | ReadonlyArray<string>
  /**
   * The algorithms a token may be signed with. Asymmetric only (`RS*`,
   * `PS*`, `ES*`, `EdDSA`, `Ed25519`): anything else is refused at
   * construction, as `none` and `HS*` let a token be forged.
   */
  readonly algorithms: ReadonlyArray<string>
  /** How far `exp` and `nbf` may be off. Default 5 seconds. */
  readonly clockTolerance?: Duration.DurationInput | undefined
  /**
   * The caller a verified token names; `undefined` refuses it as
   * `InvalidCredentials`. Default: `{ id: sub, name: name ?? sub }`, and
   * no caller without `sub`; with several issuers, the id is
   * `` `${iss} ${sub}` ``, as two issuers may each have a user of one `sub`.
   * The id owns the caller's tasks: give one that no two callers share.
   */
  readonly callerOf?: ((payload: JWTPayload) => Caller | undefined) | undefined
  /** The scheme's name in the card's `securitySchemes`. Default `bearer`. */
  readonly schemeName?: string | undefined
  /** The scheme's description in the card. */
  readonly description?: string | undefined
}

/**
 * An authenticator of bearer JWTs (`Authorization: Bearer <token>`),
 * verified with `jose`: the signature against the JWKS, one of
 * `algorithms`, `iss`, `aud`, and `exp` (required) within
 * `clockTolerance`. A missing header is `MissingCredentials`; a token that
 * fails (expired, another audience or issuer, `alg: none`, an HS256 token
 * signed with the public key, a bad signature, malformed) is
 * `InvalidCredentials`, whose message gives jose's code and claim, never
 * the token. A JWKS that cannot be fetched is not the caller's fault: the
 * authenticator dies, and the server answers 500 with an error id. The
 * card declares an `httpAuthSecurityScheme` (`Bearer`, `JWT`), and
 * refusals challenge `Bearer realm="a2a"`.
 *
 * Throws an `Error` at construction on both or neither of `jwks` and
 * `keys`, an empty issuer or audience, or algorithms empty or not
 * asymmetric.
 *
 * @example
 * ```ts
 * import { A2AServer, AgentExecutor, Authentication } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * A2AServer.layer({
 *   agent: () => Effect.succeed(AgentExecutor.completedText("hello")),
 *   card: { name: "greeter", description: "Says hello" },
 *   authenticate: Authentication.jwt({
 *     jwks: "https://auth.example.com/.well-known/jwks.json",
 *     issuer: "https://auth.example.com/",
 *     audience: "greeter",
 *     algorithms: ["RS256"]
 *   })
 * })
 * ```
 * @category ready-made
 * @since 0.1.0
 */
export const jwt: (options: JwtOptions) => Authenticator = internalJwt.make
