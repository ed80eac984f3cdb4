// Placeholder until the executor's implementation moves here: re-exports make.
export { make } from "../../AgentExecutor.js"
