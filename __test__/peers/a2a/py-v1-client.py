"""Client on the official Python a2a-sdk 1.3.0 (A2A protocol v1.0).

    PYTHONPATH=.peers/py-v1 python3 py-v1-client.py <agent-base-url> [--text hello] [--stream]

Resolves the card with the SDK's own resolver (ClientFactory.create_from_url -> A2ACardResolver,
GET <base>/.well-known/agent-card.json), sends one message with client.send_message
(non-streaming unless --stream; blocking, the SDK default), then GetTask on the returned task
(always once, and again until a terminal state), and prints one JSON line:
  {"ok":bool,"text":str|null,"state":"completed"|...,"rawState":"TASK_STATE_...","error"?:str}
The SDK picks its wire from the card: a card whose JSONRPC interface says protocolVersion 0.3
(or a legacy card with `url` and protocolVersion 0.3.x) gets the SDK's CompatJsonRpcTransport
(v0.3 method names); otherwise the v1.0 JsonRpcTransport.
"""

import asyncio
import json
import os
import sys
import uuid

from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)

TIMEOUT = float(os.environ.get('A2A_CLIENT_TIMEOUT_MS', '15000')) / 1000
TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
}


def parts_text(parts) -> str:
    return ''.join(p.text for p in parts if p.HasField('text'))


def task_text(task):
    arts = [parts_text(a.parts) for a in task.artifacts]
    arts = [a for a in arts if a]
    if arts:
        return '\n'.join(arts)
    if task.status.HasField('message'):
        return parts_text(task.status.message.parts) or None
    agent = [m for m in task.history if m.role == Role.ROLE_AGENT]
    return parts_text(agent[-1].parts) if agent else None


def norm(state: int) -> str:
    name = TaskState.Name(state)
    return name.removeprefix('TASK_STATE_').lower().replace('_', '-')


async def run(base: str, text: str, stream: bool) -> dict:
    factory = ClientFactory(ClientConfig(streaming=stream))
    client = await factory.create_from_url(base)
    try:
        transport = type(client._transport).__name__  # which wire the SDK picked
        req = SendMessageRequest(
            message=Message(
                message_id=str(uuid.uuid4()),
                role=Role.ROLE_USER,
                parts=[Part(text=text)],
            )
        )
        task = None
        msg = None
        task_id = None
        kinds = []
        async for ev in client.send_message(req):
            kinds.append(next((f for f in ('task', 'message', 'status_update', 'artifact_update') if ev.HasField(f)), 'none'))
            if ev.HasField('task'):
                task = ev.task
                task_id = task.id
            elif ev.HasField('message'):
                msg = ev.message
            elif ev.HasField('status_update'):
                task_id = task_id or ev.status_update.task_id
            elif ev.HasField('artifact_update'):
                task_id = task_id or ev.artifact_update.task_id
        if task_id is None and msg is not None:
            return {'ok': True, 'text': parts_text(msg.parts), 'state': None, 'rawState': None,
                    'kind': 'message', 'transport': transport}
        if task_id is None:
            raise RuntimeError('no task or message in the send_message response')
        if task is None:
            task = await client.get_task(GetTaskRequest(id=task_id))
        send_state = TaskState.Name(task.status.state)
        gets = 0
        deadline = asyncio.get_event_loop().time() + TIMEOUT
        while True:
            task = await client.get_task(GetTaskRequest(id=task.id))
            gets += 1
            if task.status.state in TERMINAL or asyncio.get_event_loop().time() > deadline:
                break
            await asyncio.sleep(0.2)
        return {
            'ok': task.status.state == TaskState.TASK_STATE_COMPLETED,
            'text': task_text(task),
            'state': norm(task.status.state),
            'rawState': TaskState.Name(task.status.state),
            'kind': 'task',
            'taskId': task.id,
            'sendState': send_state,
            'gets': gets,
            'transport': transport,
            'kinds': kinds,
        }
    finally:
        await client.close()


def main() -> None:
    args = sys.argv[1:]
    skip = {args.index('--text') + 1} if '--text' in args else set()
    base = next((a for i, a in enumerate(args) if not a.startswith('--') and i not in skip), None)
    text = args[args.index('--text') + 1] if '--text' in args else 'hello'
    try:
        if not base:
            raise ValueError('usage: py-v1-client.py <agent-base-url>')
        res = asyncio.run(asyncio.wait_for(run(base, text, '--stream' in args), TIMEOUT + 5))
        print(json.dumps(res), flush=True)
    except BaseException as e:  # noqa: BLE001
        print(json.dumps({'ok': False, 'text': None, 'state': None,
                          'error': f'{type(e).__name__}: {e}'}), flush=True)
        sys.exit(1)


if __name__ == '__main__':
    main()
