import { type AgentCard, canonicalizeAgentCard, generateAgentCardSignature, verifyAgentCardSignature } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Metric, Option } from "effect"
import * as jose from "jose"
import type * as http from "node:http"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { counter } from "../src/internal/client/call.js"
import * as trust from "../src/internal/client/trust.js"
import { cardFor, json, listen } from "./fixtures/peers.js"

const header = { alg: "ES256", kid: "agent-key", typ: "JOSE" }

/** The agent's key pair, and a stranger's: from jose, as a signer we did not write would make them. */
const keys = Effect.promise(async () => {
  const agent = await jose.generateKeyPair("ES256", { extractable: true })
  const stranger = await jose.generateKeyPair("ES256", { extractable: true })
  const publicJwk = { ...(await jose.exportJWK(agent.publicKey)), kid: header.kid, alg: "ES256" }
  return { agent, stranger, publicJwk }
})

/** A card with a skill, so the canonical form has nested values of each kind. */
const richCard = (rpcUrl: string): AgentCard => ({
  ...cardFor(rpcUrl),
  skills: [{ id: "book", name: "Book", description: "books a flight", tags: ["travel", "flights"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }]
})

/** Serves, at the card path, what `card` makes of the server's base URL; counts requests. */
const cardServer = (card: (base: string) => Promise<unknown>) =>
  Effect.gen(function*() {
    const holder = { base: "" }
    const server = yield* listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url?.startsWith("/.well-known/agent-card.json")) {
        void card(holder.base).then((value) => json(res, 200, value))
      } else json(res, 404, {})
    })
    holder.base = server.url
    return server
  })

const resolve = (url: string, trustOption: RemoteAgent.Trust | undefined) =>
  RemoteAgent.make({ name: "trusting", url, cardTimeout: "3 seconds", ...(trustOption === undefined ? {} : { trust: trustOption }) })

const sign = (key: jose.CryptoKey, card: AgentCard, protectedHeader: jose.JWSHeaderParameters = header) =>
  generateAgentCardSignature(key, protectedHeader)(card)

const b64 = (value: unknown) => jose.base64url.encode(JSON.stringify(value))

describe("RemoteAgent trust: signed cards", () => {
  it.scopedLive("a card signed by the SDK verifies, and is routed by what its signature covers", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const server = yield* cardServer((base) => sign(agent.privateKey, richCard(`${base}/rpc`)))
      const remote = yield* resolve(server.url, { keys: [publicJwk] })
      expect(remote.transport).toBe("JSONRPC")
      const card = Option.getOrThrow(remote.card)
      expect(card.supportedInterfaces[0]?.url).toBe(`${server.url}/rpc`)
      // The SDK's own verifier agrees about the card we accepted.
      yield* Effect.promise(() => verifyAgentCardSignature(() => jose.importJWK(publicJwk, "ES256") as Promise<jose.CryptoKey>)(card))
    }))

  it.scopedLive("a URL changed after signing: InvalidSignature", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => {
        const signed = await sign(agent.privateKey, richCard(`${base}/rpc`))
        return { ...signed, supportedInterfaces: [{ ...signed.supportedInterfaces[0], url: "http://127.0.0.1:1/elsewhere" }] }
      })
      const before = yield* Metric.value(counter("a2a.card_resolution_error", "trusting", { reason: "InvalidSignature" }))
      const error = yield* Effect.flip(resolve(server.url, { keys: [publicJwk] }))
      expect(error.reason).toBe("InvalidSignature")
      expect(error.message).toContain("does not verify over this card")
      expect(error.message).toContain("re-sign")
      const after = yield* Metric.value(counter("a2a.card_resolution_error", "trusting", { reason: "InvalidSignature" }))
      expect(after.count - before.count).toBe(1)
    }))

  it.scopedLive("a key not trusted: UntrustedSigner", () =>
    Effect.gen(function*() {
      const { publicJwk, stranger } = yield* keys
      const server = yield* cardServer((base) => sign(stranger.privateKey, richCard(`${base}/rpc`), { ...header, kid: "stranger" }))
      const error = yield* Effect.flip(resolve(server.url, { keys: [publicJwk] }))
      expect(error.reason).toBe("UntrustedSigner")
      expect(error.message).toContain(`no trusted key has kid "stranger"`)
    }))

  it.scopedLive("alg none: InvalidSignature", () =>
    Effect.gen(function*() {
      const { publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => ({
        ...richCard(`${base}/rpc`),
        signatures: [{ protected: b64({ alg: "none", kid: header.kid, typ: "JOSE" }), signature: "" }]
      }))
      const error = yield* Effect.flip(resolve(server.url, { keys: [publicJwk] }))
      expect(error.reason).toBe("InvalidSignature")
      expect(error.message).toContain("alg none is refused")
    }))

  it.scopedLive("HS256 made with the public key as the secret: InvalidSignature", () =>
    Effect.gen(function*() {
      const { publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => {
        const card = richCard(`${base}/rpc`)
        const secret = new TextEncoder().encode(JSON.stringify(publicJwk))
        const jws = await new jose.FlattenedSign(new TextEncoder().encode(canonicalizeAgentCard(card)))
          .setProtectedHeader({ alg: "HS256", kid: header.kid, typ: "JOSE" })
          .sign(secret)
        return { ...card, signatures: [{ protected: jws.protected, signature: jws.signature }] }
      })
      const error = yield* Effect.flip(resolve(server.url, { keys: [publicJwk] }))
      expect(error.reason).toBe("InvalidSignature")
      expect(error.message).toContain("alg HS256 is refused")
    }))

  it.scopedLive("unsigned when a signature is required: Unsigned; accepted when it is not", () =>
    Effect.gen(function*() {
      const { publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => richCard(`${base}/rpc`))
      const error = yield* Effect.flip(resolve(server.url, { keys: [publicJwk] }))
      expect(error.reason).toBe("Unsigned")
      expect(error.message).toContain("trust.required")
      const remote = yield* resolve(server.url, { keys: [publicJwk], required: false })
      expect(remote.transport).toBe("JSONRPC")
    }))

  it.scopedLive("a jku naming an untrusted URL is never fetched", () =>
    Effect.gen(function*() {
      const { publicJwk, stranger } = yield* keys
      const strangerJwk = { ...(yield* Effect.promise(() => jose.exportJWK(stranger.publicKey))), kid: "stranger" }
      const jku = yield* listen((_req, res) => json(res, 200, { keys: [strangerJwk] }))
      const server = yield* cardServer((base) =>
        sign(stranger.privateKey, richCard(`${base}/rpc`), { ...header, kid: "stranger", jku: `${jku.url}/jwks.json` })
      )
      const error = yield* Effect.flip(resolve(server.url, { keys: [publicJwk] }))
      expect(error.reason).toBe("UntrustedSigner")
      expect(jku.requests()).toBe(0)
    }))

  it.scopedLive("a v0.3-shaped card whose url is changed after signing: InvalidSignature, saying why", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const server = yield* cardServer(async (base) => {
        const legacy = {
          name: "legacy",
          description: "a v0.3 card",
          url: `${base}/rpc`,
          preferredTransport: "JSONRPC",
          protocolVersion: "0.3.0",
          version: "1.0.0",
          capabilities: { streaming: false },
          defaultInputModes: ["text/plain"],
          defaultOutputModes: ["text/plain"],
          skills: []
        }
        const signed = await sign(agent.privateKey, legacy as unknown as AgentCard)
        return { ...signed, url: "http://127.0.0.1:1/elsewhere" }
      })
      const error = yield* Effect.flip(resolve(server.url, { keys: [publicJwk] }))
      expect(error.reason).toBe("InvalidSignature")
      expect(error.message).toContain("signed in v0.3 form")
      expect(error.message).toContain("never verifies after translation")
    }))

  it.scopedLive("a JWKS URL is fetched once while the layer is built", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const jwks = yield* listen((_req, res) => json(res, 200, { keys: [publicJwk] }))
      const server = yield* cardServer((base) => sign(agent.privateKey, richCard(`${base}/rpc`)))
      const remote = yield* resolve(server.url, { jwks: `${jwks.url}/jwks.json` })
      expect(remote.transport).toBe("JSONRPC")
      expect(jwks.requests()).toBe(1)
    }))

  it.scopedLive("a resolver is given the protected header, and may answer with a JWK", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const server = yield* cardServer((base) => sign(agent.privateKey, richCard(`${base}/rpc`)))
      const kids: Array<string | undefined> = []
      const remote = yield* resolve(server.url, { resolve: (h) => Effect.sync(() => (kids.push(h.kid), publicJwk)) })
      expect(remote.transport).toBe("JSONRPC")
      expect(kids).toEqual([header.kid])
    }))
})

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** Every path to a leaf of a JSON value. */
const leaves = (value: Json, path: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> =>
  value !== null && typeof value === "object"
    ? Array.isArray(value)
      ? value.flatMap((v, i) => leaves(v, [...path, i]))
      : Object.entries(value).flatMap(([k, v]) => leaves(v as Json, [...path, k]))
    : [path]

const changedAt = (value: Json, path: ReadonlyArray<string | number>, suffix: string): Json => {
  if (path.length === 0) {
    return typeof value === "string" ? `${value}${suffix}` : typeof value === "number" ? value + 1 : typeof value === "boolean" ? !value : value
  }
  const [head, ...rest] = path
  if (Array.isArray(value)) return value.map((v, i) => (i === head ? changedAt(v, rest, suffix) : v))
  const record = value as { readonly [key: string]: Json }
  return { ...record, [head as string]: changedAt(record[head as string]!, rest, suffix) }
}

describe("RemoteAgent trust: what the signature covers", () => {
  it.effect("any change to a value in the canonical form of a signed card fails verification", () =>
    Effect.gen(function*() {
      const { agent, publicJwk } = yield* keys
      const signed = yield* Effect.promise(() => sign(agent.privateKey, richCard("http://127.0.0.1:1/rpc")))
      // The canonical form, as JSON a signer would serve, with the signature put back.
      const canonical = JSON.parse(canonicalizeAgentCard(signed)) as Json
      const lookup = yield* Effect.orDie(trust.lookup({ keys: [publicJwk] }, fetch))
      const check = (card: unknown) =>
        Effect.runPromise(Effect.either(trust.verify(lookup, true, card, card as AgentCard)))
      const served = (card: Json) => ({ ...(card as object), signatures: signed.signatures })
      // The property could fail: the untouched canonical card verifies.
      expect(Either.isRight(yield* Effect.promise(() => check(served(canonical))))).toBe(true)
      const paths = leaves(canonical)
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(fc.constantFrom(...paths), fc.string({ minLength: 1, maxLength: 4 }), async (path, suffix) => {
            const result = await check(served(changedAt(canonical, path, suffix)))
            return Either.isLeft(result) && result.left.reason === "InvalidSignature"
          }),
          { numRuns: 60 }
        )
      )
    }))
})
