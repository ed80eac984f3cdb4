/**
 * The code behind `ScriptedLanguageModel`: the provider that answers from its
 * script, and the scripts of the worked example.
 *
 * @internal
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { Request, Script } from "../../ScriptedLanguageModel.js"
import { lazyModule } from "../lazyModule.js"
import { toolResults } from "./prompting.js"

// `@effect/ai` loads when a scripted model's layer is built: the index names this module.
const languageModel = lazyModule(() => import("@effect/ai/LanguageModel"))

const finish: Response.PartEncoded = {
  type: "finish",
  reason: "stop",
  usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }
}

/** @internal */
export const text = (value: string): Response.PartEncoded => ({ type: "text", text: value })

/** @internal */
export const toolCall = (name: string, input: string): Response.PartEncoded => ({
  type: "tool-call",
  id: `call_${crypto.randomUUID()}`,
  name,
  params: { input },
  providerExecuted: false
})

/** @internal */
export const systemText = (prompt: Prompt.Prompt): string =>
  prompt.content.flatMap((message) => (message.role === "system" ? [message.content] : [])).join("\n")

/** @internal */
export const promptText = (prompt: Prompt.Prompt): string =>
  prompt.content
    .flatMap((message) => {
      if (message.role === "system") return [`system: ${message.content}`]
      return message.content.map((part) => {
        switch (part.type) {
          case "text":
            return `${message.role}: ${part.text}`
          case "tool-call":
            return `${message.role} tool-call ${part.name}: ${JSON.stringify(part.params)}`
          case "tool-result":
            return `${message.role} tool-result ${part.name}: ${
              typeof part.result === "string" ? part.result : JSON.stringify(part.result)
            }`
          default:
            return `${message.role}: <${part.type}>`
        }
      })
    })
    .join("\n")

/** @internal */
export const make = (script: Script) => {
  const requests: Array<Request> = []
  const answer = (options: LanguageModel.ProviderOptions) =>
    Effect.sync(() => {
      const request: Request = {
        prompt: options.prompt,
        tools: options.tools.map((tool) => tool.name),
        toolChoice: options.toolChoice
      }
      requests.push(request)
      return [...script(request, requests.length - 1), finish]
    })
  // A copy: what the model received is not the reader's to change.
  const received = Effect.sync((): ReadonlyArray<Request> => requests.slice())
  const layer = Layer.unwrapEffect(Effect.map(languageModel, (Ai) =>
    Layer.effect(
      Ai.LanguageModel,
      Ai.make({
        generateText: answer,
        streamText: (options) =>
          Stream.fromIterableEffect(answer(options)).pipe(
            Stream.flatMap((part): Stream.Stream<Response.StreamPartEncoded> =>
              part.type === "text"
                ? Stream.make<Array<Response.StreamPartEncoded>>(
                  { type: "text-start", id: "t" },
                  { type: "text-delta", id: "t", delta: part.text },
                  { type: "text-end", id: "t" }
                )
                : part.type === "tool-call" || part.type === "finish"
                ? Stream.make(part)
                : Stream.empty
            )
          )
      })
    )))
  return { requests: received, layer }
}

/** @internal */
export const followsInstruction = (tool: string, input: string): Script => (request, turn) =>
  turn === 0 ? [toolCall(tool, input)] : answer(tool, request)

const answer = (tool: string, request: Request): ReadonlyArray<Response.PartEncoded> => {
  const result = toolResults(request.prompt).at(-1) ?? ""
  const system = systemText(request.prompt)
  const marker = /^(REMOTE_[A-Z_]+)/.exec(result)?.[1]
  if (marker !== undefined && system.includes(marker)) {
    return [text(`I could not complete the ${tool} (${result}). Would you like me to retry?`)]
  }
  return [text(`Done: your ${tool} is confirmed. ${result}`)]
}

/** @internal */
export const claimsSuccess = (tool: string, input: string): Script => (_request, turn) =>
  turn === 0 ? [toolCall(tool, input)] : [text(`Done: your ${tool} is confirmed.`)]

/** @internal */
export const delegates = (tool: string): Script => (request) => {
  const last = request.prompt.content.at(-1)
  if (last?.role === "user") {
    const input = last.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join(" ")
    return [toolCall(tool, input)]
  }
  return answer(tool, request)
}
