"use strict"
// Single-turn translation helpers (SPEC §11).

const { native } = require("./native.js")
const { encode } = require("./stringify.js")

/** @typedef {import("../index").TranslatedToolCall} TranslatedToolCall */

/**
 * The OpenAI finish reason for a provider's stop reason.
 * @param {unknown} hasToolCalls read for its truthiness
 * @param {unknown} [providerStop] used when it is a string
 * @returns {string}
 */
const finishReasonFor = (hasToolCalls, providerStop) =>
  native.translateFinishReasonFor(Boolean(hasToolCalls), typeof providerStop === "string" ? providerStop : undefined)
/**
 * The text of a message's `content` (a string, or the text parts of a list).
 * @param {unknown} content
 * @returns {string}
 */
const contentText = (content) => native.translateContentText(encode(content))
// An object passes through as itself, as in the reference; anything else is parsed.
/**
 * @param {unknown} args
 * @returns {Record<string, unknown>}
 */
const argsObject = (args) => (args && typeof args === "object" ? /** @type {Record<string, unknown>} */ (args) : JSON.parse(native.translateArgsObject(encode(args))))
/**
 * @param {unknown} args
 * @returns {string} the arguments as JSON text
 */
const argsString = (args) => native.translateArgsString(encode(args))
/**
 * @param {unknown} message
 * @returns {TranslatedToolCall[]}
 */
const toolCallsOf = (message) => JSON.parse(native.translateToolCallsOf(encode(message)))
// Spread with for-of so any iterable works and a non-iterable throws JavaScript's own TypeError.
/**
 * @param {Iterable<unknown> | null | undefined} messages
 * @returns {{ messages: any[], system: string }} the Anthropic messages (parsed JSON) and the system text
 */
function openAIMessagesToAnthropic(messages) {
  const list = []
  for (const m of messages ?? []) list.push(m)
  return JSON.parse(native.translateMessagesToAnthropic(encode(list)))
}
/**
 * @param {Iterable<unknown> | null | undefined} tools
 * @returns {any[]} the Anthropic tool declarations, parsed JSON
 */
function openAIToolsToAnthropic(tools) {
  const list = []
  for (const t of tools ?? []) list.push(t)
  return JSON.parse(native.translateToolsToAnthropic(encode(list)))
}
/**
 * @param {unknown} choice
 * @returns {any} the Anthropic tool choice (parsed JSON), or undefined for none
 */
const openAIToolChoiceToAnthropic = (choice) => JSON.parse(native.translateToolChoiceToAnthropic(encode(choice))) ?? undefined
/**
 * Whether the messages hold a system message. An array is looked at whole; any other value is
 * asked through its own `some`, one message at a time.
 * @param {unknown[] | null | undefined} messages
 * @returns {boolean}
 */
const hasSystemMessage = (messages) =>
  Array.isArray(messages ?? [])
    ? native.translateHasSystemMessage(encode(messages ?? []))
    : (messages ?? []).some((m) => native.translateHasSystemMessage(encode([m])))

module.exports = { finishReasonFor, contentText, argsObject, argsString, toolCallsOf, openAIMessagesToAnthropic, openAIToolsToAnthropic, openAIToolChoiceToAnthropic, hasSystemMessage }
