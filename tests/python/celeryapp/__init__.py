"""A Celery app for the acceptance test: the broker and result backend are anykv at $ANYKV_CELERY_URL."""
import os

from celery import Celery

app = Celery("anykvtest", broker=os.environ["ANYKV_CELERY_URL"] + "/0", backend=os.environ["ANYKV_CELERY_URL"] + "/1")
app.conf.broker_connection_retry_on_startup = True


@app.task
def add(x, y):
    return x + y
