// Stripe's API takes application/x-www-form-urlencoded bodies (and query strings) with nested keys
// in brackets: `line_items[0][price]=price_1`, `metadata[userId]=...`, `expand[0]=setup_intent`.
// This reads them back into plain objects; numeric keys make arrays.

const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

export type FormValue = string | FormValue[] | { [key: string]: FormValue }

function keyPath (name: string): string[] {
  const head = /^[^[]+/.exec(name)?.[0] ?? ''
  const rest = [...name.slice(head.length).matchAll(/\[([^\]]*)\]/g)].map((match) => match[1] ?? '')
  return [head, ...rest]
}

function place (target: Record<string, FormValue>, path: string[], value: string): void {
  let node: Record<string, FormValue> = target
  for (let index = 0; index < path.length - 1; index += 1) {
    const key = path[index] ?? ''
    const next = node[key]
    if (next === undefined || typeof next === 'string') node[key] = {}
    node = node[key] as Record<string, FormValue>
  }
  node[path[path.length - 1] ?? ''] = value
}

function arraysFromIndexes (value: FormValue): FormValue {
  if (typeof value === 'string' || Array.isArray(value)) return value
  const keys = Object.keys(value)
  const converted = Object.fromEntries(keys.map((key) => [key, arraysFromIndexes(value[key] as FormValue)]))
  if (keys.length > 0 && keys.every((key) => /^\d+$/.test(key) || key === '')) {
    return keys.sort((a, b) => Number(a) - Number(b)).map((key) => converted[key] as FormValue)
  }
  return converted
}

export function parseStripeForm (text: string): Record<string, FormValue> {
  const target: Record<string, FormValue> = {}
  for (const [name, value] of new URLSearchParams(text)) {
    if (Object.keys(target).length > 1000) break
    const path = keyPath(name)
    if (path.some((key) => UNSAFE_KEYS.has(key))) continue
    place(target, path, value)
  }
  return arraysFromIndexes(target) as Record<string, FormValue>
}

export function text (value: FormValue | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined
}

export function record (value: FormValue | undefined): Record<string, FormValue> {
  return value !== undefined && typeof value === 'object' && !Array.isArray(value) ? value : {}
}

export function list (value: FormValue | undefined): FormValue[] {
  if (Array.isArray(value)) return value
  return value === undefined ? [] : [value]
}
