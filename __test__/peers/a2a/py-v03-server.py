"""Echo agent on the official Python a2a-sdk 0.3.26 (A2A protocol v0.3), JSON-RPC binding.

    PYTHONPATH=.peers/py-v03 python3 py-v03-server.py <port>

Listens on 127.0.0.1:<port> (0 = any free port) and prints the base URL as the first stdout
line. Uses A2AStarletteApplication: card at <base>/.well-known/agent-card.json (and, deprecated,
<base>/.well-known/agent.json), JSON-RPC is POST <base>/ (the card's `url`).
"""

import asyncio
import socket
import sys

import uvicorn

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TextPart
from a2a.utils import new_agent_text_message, new_task


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input('')
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact([Part(root=TextPart(text=f'echo: {text}'))], name='echo')
        await updater.complete(new_agent_text_message(f'echo: {text}', task.context_id, task.id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', port))
    base = f'http://127.0.0.1:{sock.getsockname()[1]}'
    card = AgentCard(
        name='py-v03-echo',
        description='Echo agent (a2a-sdk 0.3.26)',
        url=f'{base}/',
        version='1.0.0',
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='echo', name='echo', description='Echoes the text back', tags=['echo'])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    server = uvicorn.Server(uvicorn.Config(app, log_level='warning'))
    print(base, flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == '__main__':
    main()
