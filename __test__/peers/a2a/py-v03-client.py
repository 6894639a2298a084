"""Client on the official Python a2a-sdk 0.3.26 (A2A protocol v0.3).

    PYTHONPATH=.peers/py-v03 python3 py-v03-client.py <agent-base-url> [--text hello] [--stream]

Resolves the card with the SDK's own resolver (ClientFactory.connect -> A2ACardResolver,
GET <base>/.well-known/agent-card.json, validated as the pydantic AgentCard), sends one message
with client.send_message (non-streaming unless --stream; blocking, the SDK default), then
tasks/get on the returned task (always once, and again until a terminal state), and prints one
JSON line:
  {"ok":bool,"text":str|null,"state":"completed"|...,"rawState":<wire value>,"error"?:str}
"""

import asyncio
import json
import os
import sys
import uuid

from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, Task, TaskQueryParams, TaskState, TextPart

TIMEOUT = float(os.environ.get('A2A_CLIENT_TIMEOUT_MS', '15000')) / 1000
TERMINAL = {
    TaskState.completed, TaskState.failed, TaskState.canceled, TaskState.rejected,
    TaskState.input_required, TaskState.auth_required,
}


def parts_text(parts) -> str:
    return ''.join(p.root.text for p in (parts or []) if isinstance(p.root, TextPart))


def task_text(task: Task):
    arts = [parts_text(a.parts) for a in (task.artifacts or [])]
    arts = [a for a in arts if a]
    if arts:
        return '\n'.join(arts)
    if task.status.message:
        return parts_text(task.status.message.parts) or None
    agent = [m for m in (task.history or []) if m.role == Role.agent]
    return parts_text(agent[-1].parts) if agent else None


async def run(base: str, text: str, stream: bool) -> dict:
    client = await ClientFactory.connect(base, client_config=ClientConfig(streaming=stream))
    try:
        msg = Message(
            role=Role.user,
            message_id=str(uuid.uuid4()),
            parts=[Part(root=TextPart(text=text))],
        )
        task = None
        reply = None
        kinds = []
        async for ev in client.send_message(msg):
            if isinstance(ev, Message):
                reply = ev
                kinds.append('message')
            else:
                task = ev[0]  # (Task, update-event | None)
                kinds.append(getattr(ev[1], 'kind', None) or 'task')
        if task is None and reply is not None:
            return {'ok': True, 'text': parts_text(reply.parts), 'state': None, 'rawState': None,
                    'kind': 'message'}
        if task is None:
            raise RuntimeError('no task or message in the send_message response')
        send_state = task.status.state.value
        gets = 0
        loop = asyncio.get_event_loop()
        deadline = loop.time() + TIMEOUT
        while True:
            task = await client.get_task(TaskQueryParams(id=task.id))
            gets += 1
            if task.status.state in TERMINAL or loop.time() > deadline:
                break
            await asyncio.sleep(0.2)
        return {
            'ok': task.status.state == TaskState.completed,
            'text': task_text(task),
            'state': task.status.state.value,
            'rawState': task.status.state.value,
            'kind': 'task',
            'taskId': task.id,
            'sendState': send_state,
            'gets': gets,
            'kinds': kinds,
        }
    finally:
        await client.close()


def main() -> None:
    args = sys.argv[1:]
    text = args[args.index('--text') + 1] if '--text' in args else 'hello'
    skip = {args.index('--text') + 1} if '--text' in args else set()
    base = next((a for i, a in enumerate(args) if not a.startswith('--') and i not in skip), None)
    try:
        if not base:
            raise ValueError('usage: py-v03-client.py <agent-base-url>')
        res = asyncio.run(asyncio.wait_for(run(base, text, '--stream' in args), TIMEOUT + 5))
        print(json.dumps(res), flush=True)
    except BaseException as e:  # noqa: BLE001
        print(json.dumps({'ok': False, 'text': None, 'state': None,
                          'error': f'{type(e).__name__}: {e}'}), flush=True)
        sys.exit(1)


if __name__ == '__main__':
    main()
