// The event's location: a plain input, with suggestions from the places lookup when a key was
// fixed into the bundle (data/places.ts).
import { useEffect, useState } from 'preact/hooks'
import { suggestPlaces } from '../data/places.js'

export function LocationInput (props: { value: string, onInput: (value: string) => void }) {
  const [suggestions, setSuggestions] = useState<string[]>([])
  useEffect(() => {
    if (suggestPlaces === null || props.value.trim().length < 3) return
    const controller = new AbortController()
    const timer = setTimeout(() => {
      suggestPlaces?.(props.value, controller.signal).then(setSuggestions).catch(() => {})
    }, 250)
    return () => {
      clearTimeout(timer)
      controller.abort()
    }
  }, [props.value])
  return (
    <div class='field'>
      <label for='event-location'>Location</label>
      <input
        id='event-location' name='location' autocomplete='off' value={props.value}
        list={suggestPlaces === null ? undefined : 'event-location-suggestions'}
        onInput={(e) => props.onInput((e.currentTarget as HTMLInputElement).value)}
      />
      {suggestPlaces !== null && (
        <datalist id='event-location-suggestions'>
          {suggestions.map((place) => <option key={place} value={place} />)}
        </datalist>
      )}
    </div>
  )
}
