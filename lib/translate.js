"use strict"
// Single-turn translation helpers (SPEC §11).

const { native } = require("./native.js")
const { encode } = require("./crossing.js")

const finishReasonFor = (hasToolCalls, providerStop) =>
  native.translateFinishReasonFor(Boolean(hasToolCalls), typeof providerStop === "string" ? providerStop : undefined)
const contentText = (content) => native.translateContentText(encode(content))
// An object passes through as itself, as in the reference; anything else is parsed.
const argsObject = (args) => (args && typeof args === "object" ? args : JSON.parse(native.translateArgsObject(encode(args))))
const argsString = (args) => native.translateArgsString(encode(args))
const toolCallsOf = (message) => JSON.parse(native.translateToolCallsOf(encode(message)))
// Spread with for-of so any iterable works and a non-iterable throws JavaScript's own TypeError.
function openAIMessagesToAnthropic(messages) {
  const list = []
  for (const m of messages ?? []) list.push(m)
  return JSON.parse(native.translateMessagesToAnthropic(encode(list)))
}
function openAIToolsToAnthropic(tools) {
  const list = []
  for (const t of tools ?? []) list.push(t)
  return JSON.parse(native.translateToolsToAnthropic(encode(list)))
}
const openAIToolChoiceToAnthropic = (choice) => JSON.parse(native.translateToolChoiceToAnthropic(encode(choice))) ?? undefined
const hasSystemMessage = (messages) =>
  Array.isArray(messages ?? [])
    ? native.translateHasSystemMessage(encode(messages ?? []))
    : (messages ?? []).some((m) => native.translateHasSystemMessage(encode([m])))

module.exports = { finishReasonFor, contentText, argsObject, argsString, toolCallsOf, openAIMessagesToAnthropic, openAIToolsToAnthropic, openAIToolChoiceToAnthropic, hasSystemMessage }
