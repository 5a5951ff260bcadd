// A modal dialog on the native <dialog>: the browser makes the page behind it inert, moves focus
// into it and closes it on Escape; this puts focus back where it was when the dialog closes.
import type { ComponentChildren } from 'preact'
import { useEffect, useRef } from 'preact/hooks'

export function Dialog (props: { open: boolean, labelledBy: string, onClose: () => void, children: ComponentChildren, class?: string }) {
  const ref = useRef<HTMLDialogElement>(null)
  const opener = useRef<Element | null>(null)
  useEffect(() => {
    const dialog = ref.current
    if (dialog === null) return
    if (props.open && !dialog.open) {
      opener.current = document.activeElement
      dialog.showModal()
      // One query with both would take whichever comes first in the document, not the marked one.
      const first = dialog.querySelector<HTMLElement>('[autofocus]') ?? dialog.querySelector<HTMLElement>('input:not([type=hidden]), select, textarea, button')
      first?.focus()
    } else if (!props.open && dialog.open) {
      dialog.close()
    }
  }, [props.open])
  useEffect(() => {
    const dialog = ref.current
    if (dialog === null) return
    const onClose = () => {
      const back = opener.current
      opener.current = null
      if (back instanceof HTMLElement && back.isConnected) back.focus()
      props.onClose()
    }
    dialog.addEventListener('close', onClose)
    return () => dialog.removeEventListener('close', onClose)
  }, [props.onClose])
  return (
    <dialog ref={ref} aria-labelledby={props.labelledBy} class={props.class ?? 'dialog'}>
      {props.open ? props.children : null}
    </dialog>
  )
}
