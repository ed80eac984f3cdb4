/**
 * The ready-made authenticators: API keys and bearer JWTs, on their own and
 * in front of a real server, with the SDK's raw JSON-RPC client as the peer.
 */
import { AgentCard, TaskState } from "@a2a-js/sdk"
import type { Client } from "@a2a-js/sdk/client"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Config, ConfigProvider, Effect, Exit, Layer, Option, Redacted } from "effect"
import * as jose from "jose"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Authentication from "../src/Authentication.js"
import * as Part from "../src/Part.js"
import { closedPort, json, listen } from "./fixtures/peers.js"
import { makeClient, userMessage } from "./fixtures/serverAgents.js"

const request = (headers: Record<string, string>): Authentication.Request => ({
  headers,
  method: "POST",
  transport: "JSONRPC",
  remoteAddress: "127.0.0.1"
})

/** The authenticator's answer: the caller, or the refusal (a defect fails the test). */
const check = (authenticate: Authentication.Authenticator, headers: Record<string, string>) =>
  Effect.either(authenticate(request(headers)))

const refusal = (authenticate: Authentication.Authenticator, headers: Record<string, string>) =>
  Effect.flip(authenticate(request(headers)))

const echo: AgentExecutor.Agent = (agentRequest) =>
  Effect.succeed(AgentExecutor.completedText(`echo ${Part.textOf(agentRequest.message.parts)}`))

const card = { name: "authn-test", description: "Authentication tests" }

/** A blocking send with extra headers: the task, or the SDK client's error. */
const sendWith = (client: Client, headers: Record<string, string>) =>
  Effect.either(Effect.tryPromise({
    try: () =>
      client.sendMessage({
        tenant: "",
        message: userMessage("hello"),
        configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
        metadata: {}
      }, { serviceParameters: headers }),
    catch: (error) => String(error)
  }))

const publicCard = (url: string, version?: string) =>
  Effect.promise(() =>
    fetch(`${url}${A2AServer.cardPath}`, { headers: version === undefined ? {} : { "A2A-Version": version } }).then((
      r
    ) => r.json())
  )

/**
 * The public card declares the scheme and requires it: the v1.0 card in
 * proto JSON (`AgentCard.toJSON`, the form a signature covers), which the
 * SDK decodes back into the scheme; the v0.3 card in that version's shape.
 */
const expectDeclared = (url: string, scheme: Authentication.Scheme, legacySchemes: unknown) =>
  Effect.gen(function*() {
    const v1 = yield* publicCard(url, "1.0")
    const declared = AgentCard.toJSON({ ...AgentCard.fromJSON({}), ...scheme }) as Record<string, unknown>
    expect(v1.securitySchemes).toEqual(declared.securitySchemes)
    expect(v1.securityRequirements).toEqual(declared.securityRequirements)
    expect(AgentCard.fromJSON(v1).securitySchemes).toEqual(scheme.securitySchemes)
    const v03 = yield* publicCard(url)
    expect(v03.securitySchemes).toEqual(legacySchemes)
    expect(v03.security).toEqual([{ [Object.keys(scheme.securitySchemes ?? {})[0]!]: [] }])
  })

// ---------------------------------------------------------------------------
// API keys
// ---------------------------------------------------------------------------

const billingKey = "k-billing-4f1c9e0a"
const searchKey = "k-search-77ab02d1"
const keys = { billing: Redacted.make(billingKey), search: searchKey }

describe("apiKey", () => {
  const authenticate = Authentication.apiKey({ keys })

  it.effect("the right key answers its caller; the header is read by its lower-case name", () =>
    Effect.gen(function*() {
      expect(yield* check(authenticate, { "x-api-key": billingKey })).toMatchObject({
        _tag: "Right",
        right: { id: "billing", name: "billing" }
      })
      expect(yield* check(authenticate, { "x-api-key": searchKey })).toMatchObject({
        _tag: "Right",
        right: { id: "search" }
      })
      const custom = Authentication.apiKey({ keys, header: "X-Agent-Key" })
      expect(yield* check(custom, { "x-agent-key": searchKey })).toMatchObject({
        _tag: "Right",
        right: { id: "search" }
      })
      expect((yield* refusal(custom, { "x-api-key": searchKey })).reason).toBe("MissingCredentials")
    }))

  it.effect("no header is MissingCredentials; a wrong key, one of another key's length, a prefix or a key with more are InvalidCredentials, and no message holds a key", () =>
    Effect.gen(function*() {
      const missing = yield* refusal(authenticate, {})
      const empty = yield* refusal(authenticate, { "x-api-key": "" })
      expect([missing.reason, empty.reason]).toEqual(["MissingCredentials", "MissingCredentials"])
      const presented = [
        "k-wrong",
        "x".repeat(billingKey.length),
        billingKey.slice(0, -1) + (billingKey.endsWith("a") ? "b" : "a"),
        billingKey.slice(0, 6),
        billingKey + "0",
        searchKey.toUpperCase()
      ]
      const refusals = yield* Effect.forEach(presented, (key) => refusal(authenticate, { "x-api-key": key }))
      expect(refusals.map((error) => error.reason)).toEqual(presented.map(() => "InvalidCredentials"))
      for (const error of [missing, empty, ...refusals]) {
        const told = `${error.message} ${JSON.stringify(error)}`
        for (const secret of [billingKey, searchKey, ...presented]) expect(told).not.toContain(secret)
        expect(told).not.toContain(billingKey.slice(0, 6))
      }
    }))

  it.effect("the table from Config: Config.hashMap(Config.redacted()), caller ids with underscores kept", () =>
    Effect.gen(function*() {
      const fromConfig = yield* Config.map(
        Config.hashMap(Config.redacted(), "A2A_API_KEYS"),
        (table) => Authentication.apiKey({ keys: table })
      ).pipe(
        // As ConfigProvider.fromEnv({ pathDelim: "__" }) reads A2A_API_KEYS__billing: with "_", the name's own would split it.
        Effect.withConfigProvider(ConfigProvider.fromMap(
          new Map([["A2A_API_KEYS__billing", billingKey], ["A2A_API_KEYS__search_eu", searchKey]]),
          { pathDelim: "__" }
        ))
      )
      expect(yield* check(fromConfig, { "x-api-key": searchKey })).toMatchObject({
        _tag: "Right",
        right: { id: "search_eu" }
      })
      expect((yield* refusal(fromConfig, { "x-api-key": "nope" })).reason).toBe("InvalidCredentials")
    }))

  it("construction refuses an empty table, an empty id or key, and one key held by two callers, naming no key", () => {
    const cases: ReadonlyArray<readonly [Authentication.ApiKeyOptions, RegExp]> = [
      [{ keys: {} }, /table of keys is empty/],
      [{ keys: { billing: Redacted.make("") } }, /key of caller "billing" is empty/],
      [{ keys: [["", billingKey]] }, /caller id is empty/],
      [
        { keys: { billing: billingKey, search: Redacted.make(billingKey) } },
        /callers "billing" and "search" have the same key/
      ],
      [{ keys, header: " " }, /header name is empty/]
    ]
    for (const [options, message] of cases) {
      let thrown: unknown
      try {
        Authentication.apiKey(options)
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(Error)
      expect((thrown as Error).message).toMatch(message)
      expect((thrown as Error).message).not.toContain(billingKey)
    }
  })

  it("the scheme: an apiKeySecurityScheme on the header, required, and an ApiKey challenge", () => {
    expect(
      Authentication.apiKey({ keys, header: "X-Agent-Key", schemeName: "agentKey", description: "one per caller" })
        .scheme
    )
      .toEqual({
        securitySchemes: {
          agentKey: {
            scheme: {
              $case: "apiKeySecurityScheme",
              value: { name: "X-Agent-Key", location: "header", description: "one per caller" }
            }
          }
        },
        securityRequirements: [{ schemes: { agentKey: { list: [] } } }],
        challenge: "ApiKey header=\"X-Agent-Key\""
      })
    expect(authenticate.scheme?.challenge).toBe("ApiKey header=\"X-API-Key\"")
    expect(Object.keys(authenticate.scheme?.securitySchemes ?? {})).toEqual(["apiKey"])
  })

  it.scopedLive("end to end: the right key completes, none or a wrong one is 401; the card declares the scheme", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: echo, card, authenticate })
      const client = yield* makeClient(server.url)
      const done = yield* sendWith(client, { "x-api-key": billingKey })
      expect(done).toMatchObject({ _tag: "Right", right: { status: { state: TaskState.TASK_STATE_COMPLETED } } })
      for (const headers of [{}, { "x-api-key": "k-wrong" }]) {
        const refused = yield* sendWith(client, headers)
        expect(refused._tag).toBe("Left")
        expect(refused._tag === "Left" ? refused.left : "").toMatch(/Status: 401/)
      }
      yield* expectDeclared(server.url, authenticate.scheme!, {
        apiKey: { type: "apiKey", in: "header", name: "X-API-Key" }
      })
    }))

  it.scopedLive("end to end from Config: A2AServer.layerConfig with the table from the environment", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(A2AServer.layerConfig({
        agent: Config.succeed(echo),
        card: { name: Config.succeed("authn-config"), description: Config.succeed("from Config") },
        port: Config.succeed(0),
        authenticate: Config.map(
          Config.hashMap(Config.redacted(), "A2A_API_KEYS"),
          (table) => Authentication.apiKey({ keys: table })
        )
      })).pipe(
        Effect.withConfigProvider(
          ConfigProvider.fromMap(new Map([["A2A_API_KEYS__search", searchKey]]), { pathDelim: "__" })
        )
      )
      const server = yield* Effect.provide(A2AServer.A2AServer, Layer.succeedContext(context))
      const client = yield* makeClient(server.url)
      expect((yield* sendWith(client, { "x-api-key": searchKey }))._tag).toBe("Right")
      expect((yield* sendWith(client, { "x-api-key": billingKey }))._tag).toBe("Left")
    }))
})

// ---------------------------------------------------------------------------
// JWTs
// ---------------------------------------------------------------------------

const issuer = "https://auth.test/"
const audience = "authn-test"

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

const makeKeys = Effect.promise(async () => {
  const rsa = await jose.generateKeyPair("RS256", { extractable: true })
  const ec = await jose.generateKeyPair("ES256", { extractable: true })
  const other = await jose.generateKeyPair("RS256")
  const jwks: jose.JSONWebKeySet = {
    keys: [
      { ...(await jose.exportJWK(rsa.publicKey)), kid: "rsa-1", alg: "RS256", use: "sig" },
      { ...(await jose.exportJWK(ec.publicKey)), kid: "ec-1", alg: "ES256", use: "sig" }
    ]
  }
  const rsaPem = await jose.exportSPKI(rsa.publicKey)
  return { rsa, ec, other, jwks, rsaPem }
})

type Claims = {
  readonly sub?: string | undefined
  readonly iss?: string
  readonly aud?: string
  readonly exp?: number | string | undefined
  readonly name?: string
}

const sign = (
  key: jose.CryptoKey | Uint8Array,
  header: jose.JWTHeaderParameters,
  claims: Claims = {}
): Effect.Effect<string> =>
  Effect.promise(() => {
    const jwt = new jose.SignJWT(claims.name === undefined ? {} : { name: claims.name })
      .setProtectedHeader(header)
      .setIssuer(claims.iss ?? issuer)
      .setAudience(claims.aud ?? audience)
      .setIssuedAt()
    if (!("sub" in claims) || claims.sub !== undefined) jwt.setSubject(claims.sub ?? "alice")
    if (!("exp" in claims) || claims.exp !== undefined) jwt.setExpirationTime(claims.exp ?? "5m")
    return jwt.sign(key)
  })

describe("jwt", () => {
  const options = { issuer, audience, algorithms: ["RS256", "ES256"] } as const

  it.effect("a valid token answers its caller (sub, and name when given), RS256 and ES256; the scheme is Bearer", () =>
    Effect.gen(function*() {
      const { ec, jwks, rsa } = yield* makeKeys
      const authenticate = Authentication.jwt({ ...options, keys: jwks })
      const named = yield* sign(rsa.privateKey, { alg: "RS256", kid: "rsa-1" }, { name: "Alice" })
      expect(yield* check(authenticate, { authorization: `Bearer ${named}` })).toMatchObject({
        _tag: "Right",
        right: { id: "alice", name: "Alice" }
      })
      const unnamed = yield* sign(ec.privateKey, { alg: "ES256", kid: "ec-1" }, { sub: "bob" })
      expect(yield* check(authenticate, { authorization: `bearer  ${unnamed}` })).toMatchObject({
        _tag: "Right",
        right: { id: "bob", name: "bob" }
      })
      // Two issuers may each have an alice: the id names the issuer, so neither reads the other's tasks.
      const twoIssuers = Authentication.jwt({ ...options, issuer: [issuer, "https://other.test/"], keys: jwks })
      const otherAlice = yield* sign(rsa.privateKey, { alg: "RS256", kid: "rsa-1" }, { iss: "https://other.test/" })
      expect(yield* check(twoIssuers, { authorization: `Bearer ${named}` })).toMatchObject({
        right: { id: `${issuer} alice`, name: "Alice" }
      })
      expect(yield* check(twoIssuers, { authorization: `Bearer ${otherAlice}` })).toMatchObject({
        right: { id: "https://other.test/ alice" }
      })
      const custom = Authentication.jwt({
        ...options,
        keys: jwks,
        callerOf: (payload) => ({ id: `user:${payload.sub}`, name: "x" })
      })
      expect(yield* check(custom, { authorization: `Bearer ${unnamed}` })).toMatchObject({
        _tag: "Right",
        right: { id: "user:bob" }
      })
      expect(authenticate.scheme).toEqual({
        securitySchemes: {
          bearer: {
            scheme: {
              $case: "httpAuthSecurityScheme",
              value: { scheme: "Bearer", bearerFormat: "JWT", description: "" }
            }
          }
        },
        securityRequirements: [{ schemes: { bearer: { list: [] } } }],
        challenge: "Bearer realm=\"a2a\""
      })
    }))

  it.effect("expired, another audience or issuer, alg none, HS256 with the public key, a bad signature, malformed, no sub, no exp: all InvalidCredentials, saying why, never holding the token", () =>
    Effect.gen(function*() {
      const { jwks, other, rsa, rsaPem } = yield* makeKeys
      const authenticate = Authentication.jwt({ ...options, keys: jwks })
      const rs = { alg: "RS256", kid: "rsa-1" }
      const now = Math.floor(Date.now() / 1000)
      const valid = yield* sign(rsa.privateKey, rs)
      const [payload, signature] = [valid.split(".")[1]!, valid.split(".")[2]!]
      const cases: ReadonlyArray<readonly [string, string, RegExp]> = [
        ["expired", yield* sign(rsa.privateKey, rs, { exp: now - 60 }), /^ERR_JWT_EXPIRED exp/],
        ["audience", yield* sign(rsa.privateKey, rs, { aud: "someone-else" }), /^ERR_JWT_CLAIM_VALIDATION_FAILED aud/],
        [
          "issuer",
          yield* sign(rsa.privateKey, rs, { iss: "https://evil.test/" }),
          /^ERR_JWT_CLAIM_VALIDATION_FAILED iss/
        ],
        ["alg none", `${base64url({ alg: "none", typ: "JWT" })}.${payload}.`, /^ERR_JOSE_ALG_NOT_ALLOWED/],
        [
          "HS256 with the public key",
          yield* sign(new TextEncoder().encode(rsaPem), { alg: "HS256", kid: "rsa-1" }),
          /^ERR_JOSE_ALG_NOT_ALLOWED/
        ],
        ["another key", yield* sign(other.privateKey, rs), /^ERR_JWS_SIGNATURE_VERIFICATION_FAILED/],
        [
          "signature of another payload",
          `${valid.split(".")[0]}.${base64url({ sub: "root" })}.${signature}`,
          /^ERR_JWS_SIGNATURE_VERIFICATION_FAILED/
        ],
        ["unknown kid", yield* sign(rsa.privateKey, { alg: "RS256", kid: "rsa-9" }), /^ERR_JWKS_NO_MATCHING_KEY/],
        ["malformed", "not.a.jwt", /^ERR_JWS_INVALID/],
        ["no sub", yield* sign(rsa.privateKey, rs, { sub: undefined }), /names no caller/],
        ["no exp", yield* sign(rsa.privateKey, rs, { exp: undefined }), /^ERR_JWT_CLAIM_VALIDATION_FAILED exp/]
      ]
      for (const [what, token, why] of cases) {
        const error = yield* refusal(authenticate, { authorization: `Bearer ${token}` })
        expect({ what, reason: error.reason }).toEqual({ what, reason: "InvalidCredentials" })
        expect(error.message, what).toMatch(why)
        const told = `${error.message} ${JSON.stringify(error)}`
        expect(told, what).not.toContain(token)
        for (const part of token.split(".").filter((piece) => piece.length > 8)) expect(told, what).not.toContain(part)
      }
    }))

  it.effect("no Authorization header is MissingCredentials; another scheme is InvalidCredentials", () =>
    Effect.gen(function*() {
      const { jwks } = yield* makeKeys
      const authenticate = Authentication.jwt({ ...options, keys: jwks })
      expect((yield* refusal(authenticate, {})).reason).toBe("MissingCredentials")
      const basic = yield* refusal(authenticate, { authorization: "Basic YWxpY2U6czNjcmV0" })
      expect(basic.reason).toBe("InvalidCredentials")
      expect(basic.message).not.toContain("YWxpY2U6czNjcmV0")
    }))

  it.scopedLive("a remote JWKS on loopback verifies; one that cannot be fetched is a defect, not a caller nor a refusal", () =>
    Effect.gen(function*() {
      const { jwks, rsa } = yield* makeKeys
      const served = yield* listen((_req, res) => json(res, 200, jwks))
      const remote = Authentication.jwt({ ...options, jwks: `${served.url}/jwks.json` })
      const token = yield* sign(rsa.privateKey, { alg: "RS256", kid: "rsa-1" })
      expect(yield* check(remote, { authorization: `Bearer ${token}` })).toMatchObject({
        _tag: "Right",
        right: { id: "alice" }
      })
      expect(served.requests()).toBe(1)

      const unreachable = Authentication.jwt({ ...options, jwks: `${yield* closedPort}/jwks.json` })
      const exit = yield* Effect.exit(unreachable(request({ authorization: `Bearer ${token}` })))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(Exit.isFailure(exit) && Option.isNone(Cause.failureOption(exit.cause))).toBe(true)
    }))

  it.effect("construction refuses both or neither of jwks and keys, empty claims, and algorithms empty or not asymmetric", () =>
    Effect.gen(function*() {
      const { jwks } = yield* makeKeys
      const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
        [{ ...options }, /exactly one of jwks/],
        [{ ...options, keys: jwks, jwks: "http://127.0.0.1:1/jwks.json" }, /exactly one of jwks/],
        [{ ...options, keys: jwks, issuer: "" }, /issuer is empty/],
        [{ ...options, keys: jwks, audience: [] }, /audience is empty/],
        [{ ...options, keys: jwks, algorithms: [] }, /algorithms is empty/],
        [{ ...options, keys: jwks, algorithms: ["RS256", "HS256"] }, /algorithms HS256 refused/],
        [{ ...options, keys: jwks, algorithms: ["none"] }, /algorithms none refused/]
      ]
      for (const [given, message] of cases) {
        expect(() => Authentication.jwt(given as Authentication.JwtOptions)).toThrow(message)
      }
    }))

  it.scopedLive("end to end: a valid bearer token completes, none or an expired one is 401; the card declares the scheme", () =>
    Effect.gen(function*() {
      const { jwks, rsa } = yield* makeKeys
      const authenticate = Authentication.jwt({ ...options, keys: jwks })
      const server = yield* A2AServer.make({ agent: echo, card, authenticate })
      const client = yield* makeClient(server.url)
      const rs = { alg: "RS256", kid: "rsa-1" }
      const token = yield* sign(rsa.privateKey, rs)
      expect(yield* sendWith(client, { authorization: `Bearer ${token}` })).toMatchObject({
        _tag: "Right",
        right: { status: { state: TaskState.TASK_STATE_COMPLETED } }
      })
      const expired = yield* sign(rsa.privateKey, rs, { exp: Math.floor(Date.now() / 1000) - 60 })
      for (const headers of [{}, { authorization: `Bearer ${expired}` }]) {
        const refused = yield* sendWith(client, headers)
        expect(refused._tag).toBe("Left")
        expect(refused._tag === "Left" ? refused.left : "").toMatch(/Status: 401/)
      }
      yield* expectDeclared(server.url, authenticate.scheme!, {
        bearer: { type: "http", scheme: "Bearer", bearerFormat: "JWT" }
      })
    }))
})
