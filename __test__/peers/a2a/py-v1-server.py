"""Echo agent on the official Python a2a-sdk 1.3.0 (A2A protocol v1.0), JSON-RPC binding.

    PYTHONPATH=.peers/py-v1 python3 py-v1-server.py <port> [--compat]

Listens on 127.0.0.1:<port> (0 = any free port) and prints the base URL as the first stdout
line. Card at <base>/.well-known/agent-card.json (create_agent_card_routes), JSON-RPC is
POST <base>/ (create_jsonrpc_routes). --compat passes enable_v0_3_compat=True to the JSON-RPC
routes (v0.3 method names are then served too) and advertises a second JSONRPC interface with
protocolVersion "0.3".
"""

import asyncio
import socket
import sys
import uuid

import uvicorn

from starlette.applications import Starlette

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
)


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input('')
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            task.id = context.task_id
            task.context_id = context.context_id
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact([new_text_part(f'echo: {text}')], name='echo')
        await updater.complete(
            new_text_message(f'echo: {text}', context_id=task.context_id, task_id=task.id)
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    compat = '--compat' in sys.argv
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', port))
    base = f'http://127.0.0.1:{sock.getsockname()[1]}'

    interfaces = [AgentInterface(url=f'{base}/', protocol_binding='JSONRPC', protocol_version='1.0')]
    if compat:
        interfaces.append(
            AgentInterface(url=f'{base}/', protocol_binding='JSONRPC', protocol_version='0.3')
        )
    card = AgentCard(
        name='py-v1-echo',
        description='Echo agent (a2a-sdk 1.3.0)',
        supported_interfaces=interfaces,
        version='1.0.0',
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='echo', name='echo', description='Echoes the text back', tags=['echo'])],
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(
        handler, rpc_url='/', enable_v0_3_compat=compat
    )
    app = Starlette(routes=routes)
    config = uvicorn.Config(app, log_level='warning')
    server = uvicorn.Server(config)
    print(base, flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == '__main__':
    main()
